/**
 * The upload benchmark's baseline: a Deno server that only streams the request body to a file,
 * fsyncs and renames it, as our local driver does, without any checking.
 */
const [portText, dir] = Deno.args;
Deno.serve(
  { hostname: "127.0.0.1", port: Number(portText), onListen: () => console.log("ready") },
  async (req) => {
    const tmp = `${dir}/${crypto.randomUUID()}.part`;
    const file = await Deno.open(tmp, { write: true, createNew: true });
    await req.body!.pipeTo(file.writable, { preventClose: true });
    await file.syncData();
    file.close();
    await Deno.rename(tmp, `${dir}/latest.csv`);
    return new Response("stored", { status: 201 });
  },
);
