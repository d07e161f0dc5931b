import { GraphQLError } from 'graphql';
import type { GatewaySettings } from '@ots/shared/config';
import type { Logger } from '@ots/shared/logger';
import type { Authentication, AuthorisedKey } from '../authentication.ts';
import type { GatewayContext } from '../data-source.ts';
import type { DEFAULT_STREAM_LIMITS, EndReason, EventStream } from './event-stream.ts';
import type { StreamPlace, StreamRegistry } from './registry.ts';
import type { EventsArgs, streamSchema } from './schema.ts';

/** What both transports need to open a stream for an authorised caller. */
export interface StreamServices {
  config: GatewaySettings;
  authentication: Authentication;
  registry: StreamRegistry;
  limits: typeof DEFAULT_STREAM_LIMITS;
  schema: ReturnType<typeof streamSchema>;
  logger: Logger;
  /** Opens a stream for the caller, or throws FORBIDDEN without the `read` scope, TOO_MANY_STREAMS when its key holds `perKey` already. */
  openStream(caller: GatewayContext['caller'], key: AuthorisedKey, args: EventsArgs, transport: StreamTransport): Promise<EventStream>;
  /** Calls `listener` whenever the key cache sees a change to keys or accounts; returns the function that stops the calls. */
  onKeysChanged(listener: () => void): () => void;
}

interface StreamTransport {
  /** The place the transport took for the stream before answering its request. */
  place: StreamPlace;
  /** A resume point sent by the transport itself (SSE's Last-Event-ID), over the operation's `after`. */
  resumeFrom?: string | undefined;
  hasRoom(stream: EventStream): boolean;
  onEnd(reason: EndReason): void;
}

export function tooManyStreams(perKey: number): GraphQLError {
  return new GraphQLError(`At most ${perKey} open streams per API key: close one first`, { extensions: { code: 'TOO_MANY_STREAMS', http: { status: 429 } } });
}
