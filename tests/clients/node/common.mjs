// Shared by the client scripts: read the scenario from argv, print one JSON result line.
// Every script prints {"ok": true, ...} or {"ok": false, "error": "...", "name": "..."} and
// exits 0, so the pytest side can assert on exactly what the client library did.
export function config() {
  const cfg = JSON.parse(process.argv[2] ?? "{}");
  for (const key of ["baseURL", "apiKey", "model", "scenario"]) {
    if (!cfg[key]) throw new Error(`missing ${key} in the scenario config`);
  }
  return cfg;
}

export async function report(run) {
  let out;
  try {
    out = { ok: true, ...(await run()) };
  } catch (err) {
    out = {
      ok: false,
      name: err?.constructor?.name ?? err?.name ?? typeof err,
      error: String(err?.message ?? err),
      status: err?.status ?? err?.statusCode ?? null,
    };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
