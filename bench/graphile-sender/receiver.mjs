import http from 'node:http';

let count = 0;
const s = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    count++;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
    if (count === Number(process.env.GW_N)) process.send({ done: Date.now() });
  });
});
s.keepAliveTimeout = 60000;
s.listen(0, '127.0.0.1', () => process.send({ port: s.address().port }));
process.on('message', (m) => {
  if (m === 'count') process.send({ count });
});
