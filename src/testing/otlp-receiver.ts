import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/JSON export carried it, its attributes flattened. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  /** Undefined for a root span. */
  readonly parentSpanId: string | undefined;
  readonly name: string;
  /** OTLP's SpanKind number: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  readonly events: readonly { readonly name: string; readonly attributes: Readonly<Record<string, string | number | boolean>> }[];
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  readonly status: number;
}

export interface OtlpReceiverOptions {
  /** False: every export is answered and dropped unread (a bench measures the worker, not this receiver). Default true. */
  readonly keepSpans?: boolean;
}

/**
 * An OTLP/HTTP collector in the test's own process: it accepts the JSON protocol on `/v1/traces` and
 * keeps the spans, so a test asserts on the traces a real worker exported. Point a worker at it with
 * OTEL_TRACES_EXPORTER=otlp and OTEL_EXPORTER_OTLP_ENDPOINT=`endpoint`.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Export requests answered. */
  requests = 0;

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
  ) {}

  static async start(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
    const keep = options.keepSpans ?? true;
    let receiver: OtlpReceiver | undefined;
    const server = createServer((req, res) => void receiver?.handle(req, res, keep));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    // A harness that forgets to close it still exits.
    server.unref();
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse, keep: boolean): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    if (!(req.headers['content-type'] ?? '').includes('application/json')) {
      // This receiver speaks OTLP's JSON encoding only: a protobuf export is refused, never misread.
      res.writeHead(415).end();
      return;
    }
    if (keep) this.spans.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport));
    this.requests++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }
}

interface OtlpValue {
  readonly stringValue?: string;
  readonly intValue?: string | number;
  readonly doubleValue?: number;
  readonly boolValue?: boolean;
}
interface OtlpAttribute {
  readonly key: string;
  readonly value: OtlpValue;
}
interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes?: readonly OtlpAttribute[];
  readonly events?: readonly { readonly name: string; readonly attributes?: readonly OtlpAttribute[] }[];
  readonly links?: readonly { readonly traceId: string; readonly spanId: string }[];
  readonly status?: { readonly code?: number };
}
interface OtlpExport {
  readonly resourceSpans?: readonly { readonly resource?: { readonly attributes?: readonly OtlpAttribute[] }; readonly scopeSpans?: readonly { readonly spans?: readonly OtlpSpan[] }[] }[];
}

function spansOf(body: OtlpExport): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of body.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const s of scope.spans ?? []) {
        out.push({
          service,
          traceId: hexId(s.traceId),
          spanId: hexId(s.spanId),
          parentSpanId: s.parentSpanId === undefined || s.parentSpanId === '' ? undefined : hexId(s.parentSpanId),
          name: s.name,
          kind: s.kind,
          attributes: attributesOf(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
          links: (s.links ?? []).map((l) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
          status: s.status?.code ?? 0,
        });
      }
    }
  }
  return out;
}

function attributesOf(attributes: readonly OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    const v = value.stringValue ?? value.boolValue ?? value.doubleValue ?? (value.intValue === undefined ? undefined : Number(value.intValue));
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** OTLP/JSON writes ids in hex; an exporter that writes base64 (protobuf's JSON mapping) is read too. */
function hexId(id: string): string {
  return /^[0-9a-f]+$/i.test(id) && (id.length === 32 || id.length === 16) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}
