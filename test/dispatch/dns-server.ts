/**
 * A tiny authoritative DNS server over UDP on 127.0.0.1 for tests: answers A and AAAA queries
 * from a table, counts every query, and never answers names marked `hang` (a resolver that
 * does not reply, the case getaddrinfo handles worst).
 */
import dgram from 'node:dgram';
import ipaddr from 'ipaddr.js';

export interface Zone {
  [name: string]: { a?: string[]; aaaa?: string[]; ttl?: number } | 'hang';
}

export interface TestDnsServer {
  /** `127.0.0.1:port`, for HOOKPOST_DNS_SERVERS or the sender's dnsServers. */
  address: string;
  /** Queries received, by `name/A` or `name/AAAA`. */
  queries: Map<string, number>;
  zone: Zone;
  close(): Promise<void>;
}

const TYPES: Record<number, 'A' | 'AAAA'> = { 1: 'A', 28: 'AAAA' };

function readName(msg: Buffer, offset: number): [string, number] {
  const labels: string[] = [];
  while (msg[offset]! !== 0) {
    const len = msg[offset]!;
    labels.push(msg.subarray(offset + 1, offset + 1 + len).toString('ascii'));
    offset += len + 1;
  }
  return [labels.join('.').toLowerCase(), offset + 1];
}

export async function startDnsServer(zone: Zone): Promise<TestDnsServer> {
  const socket = dgram.createSocket('udp4');
  const queries = new Map<string, number>();
  socket.on('message', (msg, rinfo) => {
    const [name, end] = readName(msg, 12);
    const type = TYPES[msg.readUInt16BE(end)];
    const key = `${name}/${type ?? msg.readUInt16BE(end)}`;
    queries.set(key, (queries.get(key) ?? 0) + 1);
    const entry = zone[name];
    if (entry === 'hang') return;
    const question = msg.subarray(12, end + 4);
    const records = entry === undefined || !type ? [] : ((type === 'A' ? entry.a : entry.aaaa) ?? []);
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0);
    header.writeUInt16BE(entry === undefined ? 0x8183 : 0x8180, 2); // NXDOMAIN or NOERROR
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records.length, 6);
    const answers = records.map((address) => {
      const data =
        type === 'A'
          ? Buffer.from(address.split('.').map(Number))
          : Buffer.from(ipaddr.parse(address).toByteArray());
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // pointer to the question's name
      rr.writeUInt16BE(type === 'A' ? 1 : 28, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE((entry as { ttl?: number }).ttl ?? 60, 6);
      rr.writeUInt16BE(data.length, 10);
      return Buffer.concat([rr, data]);
    });
    socket.send(Buffer.concat([header, question, ...answers]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries,
    zone,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
