/**
 * The API's resources as the console reads them: aliases of the OpenAPI
 * document's types (generated from the service's contracts: npm run gen:api-types).
 * Flow node configs are the service's own types.
 */
import type { NodeConfigs, NodeType } from "../../../src/flows/node-types/index.js";
import type { components, operations } from "./api-types.gen.js";

export type { NodeConfigs, NodeType };

/** The document's named schemas. */
type Schemas = components["schemas"];
/** The JSON body of an operation's 200 answer (for shapes the document does not name). */
type Answer<Op extends keyof operations> = operations[Op]["responses"] extends {
  200: { content: { "application/json": infer Body } };
}
  ? Body
  : never;
/** The JSON body an operation takes. */
type RequestBody<Op extends keyof operations> = operations[Op] extends {
  requestBody: { content: { "application/json": infer Body } };
}
  ? Body
  : never;

export type Me = Answer<"getMe">;
export type User = Me["user"];
export type Member = Answer<"getAccountsMembers">["members"][number];
export type ApiKey = Answer<"getApiKeys">["api_keys"][number];

export type Contact = Schemas["Contact"];
export type Reaction = Schemas["Reaction"];
export type MediaInfo = Schemas["MessageMedia"];
export type Message = Schemas["Message"];
export type Conversation = Schemas["Conversation"];
export type ConversationStatus = Conversation["status"];
/** Whether flows may start in a conversation (product.md section 20). */
export type Automation = Schemas["Automation"];

export type Flow = Schemas["Flow"];
export type FlowStatus = Flow["status"];
export type TriggerType = Flow["trigger_type"];
/** A node as the editor holds it and saves it (PUT /api/flows/{id} `nodes`), placed on the canvas. */
export type FlowNode = Required<NonNullable<RequestBody<"putFlowsById">["nodes"]>[number]>;
/** A flow with its nodes (GET and PUT /api/flows/{id}). */
export type FlowWithNodes = Answer<"getFlowsById">;
export type FlowTemplate = Answer<"getFlowsTemplates">["templates"][number];
export type Issue = Schemas["ValidationIssue"];
export type Run = Schemas["FlowRun"];
export type RunEvent = Schemas["FlowRunEvent"];

export type ChannelHealth = Schemas["MessagingConfigHealth"];
export type WaTemplate = Schemas["Template"];
export type CannedResponse = Schemas["CannedResponse"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type WebhookDelivery = Schemas["WebhookDelivery"];
