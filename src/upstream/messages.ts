/**
 * The messages the service sends through the Graph API, as types only: pure,
 * so that modules the console imports too (the flow node types) can name them.
 */

export type InteractiveBody =
  | {
      type: "button";
      header?: { type: "text"; text: string };
      body: { text: string };
      footer?: { text: string };
      action: { buttons: Array<{ type: "reply"; reply: { id: string; title: string } }> };
    }
  | {
      type: "list";
      header?: { type: "text"; text: string };
      body: { text: string };
      footer?: { text: string };
      action: {
        button: string;
        sections: Array<{
          title?: string;
          rows: Array<{ id: string; title: string; description?: string }>;
        }>;
      };
    };

/** The `type`-specific part of a send; `to` and `messaging_product` are added by sendMessage. */
export type OutboundMessage =
  | { type: "text"; text: { body: string; preview_url?: boolean } }
  | { type: "interactive"; interactive: InteractiveBody }
  | { type: "image" | "video"; image?: MediaRef; video?: MediaRef }
  | { type: "audio"; audio: { id: string } | { link: string } }
  | { type: "document"; document: MediaRef & { filename?: string } }
  | { type: "reaction"; reaction: { message_id: string; emoji: string } }
  | { type: "template"; template: TemplateMessage };

export interface MediaLink {
  link: string;
  caption?: string;
}

/** A media file by its public link, or by the id Meta gave it on upload. */
export type MediaRef = MediaLink | { id: string; caption?: string };

/** A template send: `components` carry the values of the template's `{{n}}` placeholders. */
export interface TemplateMessage {
  name: string;
  language: { code: string };
  components?: TemplateComponentParameters[];
}

export interface TemplateComponentParameters {
  type: string;
  sub_type?: string;
  index?: string;
  parameters: Array<Record<string, unknown>>;
}
