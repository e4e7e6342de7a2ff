// Each marked line must fail to compile with the error code it names, and nothing else may fail:
// the generated types catch a wrong field type, an unknown route and a missing parameter.
import { createHookpostClient, type Endpoint } from '@hookpost/client';

const client = createHookpostClient({ baseUrl: 'http://127.0.0.1:1', token: 'hpk_x' });

export async function wrongCalls(): Promise<void> {
  await client.POST('/v1/deliveries', { body: { event_type: 42, payload: {} } }); // expect TS2322
  await client.POST('/v1/deliveries', { body: { payload: {} } }); // expect TS2322
  await client.GET('/v1/deliveries/{id}', { params: { path: { id: 7 } } }); // expect TS2322
  await client.GET('/v1/deliveries/{id}'); // expect TS2554
  await client.GET('/v1/no-such-route', {}); // expect TS2345
  await client.POST('/v1/endpoints', { body: { url: 'https://example.com', signature_scheme: 'v2' } }); // expect TS2322
  const { data } = await client.GET('/v1/endpoints');
  const url: number | undefined = data?.data[0]?.url; // expect TS2322
  const endpoint: Endpoint | undefined = data?.data[0];
  endpoint?.no_such_field; // expect TS2339
  client.list('/v1/deliveries/{id}'); // expect TS2345
  console.log(url);
}
