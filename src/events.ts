/**
 * In-process notifications between features. The webhook emits once a batch
 * is stored (after Meta has its 200); the flow runner listens. Handlers run
 * asynchronously and their failures are reported, never thrown back at the
 * emitter.
 */
export interface InboundMessageStored {
  accountId: string;
  contactId: string;
  conversationId: string;
  /** Internal message id (messages.id). */
  messageId: string;
  /** True when this is the conversation's first message from the customer. */
  firstInbound: boolean;
  /** The message's type and text, so a listener can tell cheaply whether it cares. */
  messageType: string;
  text: string | null;
}

type Handler<T> = (event: T) => Promise<void> | void;

export interface AppEvents {
  onInboundMessage(handler: Handler<InboundMessageStored>): void;
  /** Resolves when every handler has finished (tests and graceful shutdown wait on it). */
  emitInboundMessage(event: InboundMessageStored): Promise<void>;
  /** Resolves when every handler started so far has finished. */
  idle(): Promise<void>;
}

export function createEvents(onError: (error: unknown) => void): AppEvents {
  const handlers: Handler<InboundMessageStored>[] = [];
  const pending = new Set<Promise<void>>();
  return {
    onInboundMessage(handler) {
      handlers.push(handler);
    },
    emitInboundMessage(event) {
      const run = Promise.all(
        handlers.map(async (handler) => {
          try {
            await handler(event);
          } catch (error) {
            onError(error);
          }
        }),
      ).then(() => undefined);
      pending.add(run);
      void run.finally(() => pending.delete(run));
      return run;
    },
    async idle() {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}
