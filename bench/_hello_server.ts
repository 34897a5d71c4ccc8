/** The initiate benchmark's reference: the smallest possible `Deno.serve` JSON answer. */
const port = Number(Deno.args[0]);
Deno.serve(
  { hostname: "127.0.0.1", port, onListen: () => console.log("ready") },
  () => new Response('{"hello":"world"}', { headers: { "content-type": "application/json" } }),
);
