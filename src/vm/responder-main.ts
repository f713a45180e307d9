/**
 * The responder's process (responder.ts): started by responder-host.ts under
 * `setpriv --pdeathsig SIGKILL`, in its own process group, with the path of
 * its configuration as the only argument. It prints "ready" once every
 * socket listens and runs until it is killed; any failure ends it with
 * status 70, which the host reports as an infrastructure failure.
 */
import { parseJsonBytes, readFileBounded } from "../core/index.ts";
import { startResponder, type ResponderConfig } from "./responder.ts";

const CONFIG_MAX_BYTES = 4 * 1024 * 1024;

try {
  const file = process.argv[2];
  if (file === undefined) throw new Error("usage: responder-main CONFIG");
  // cairn wrote this file into its own private directory a moment ago; the shape is cairn's own
  const config = parseJsonBytes(readFileBounded(file, CONFIG_MAX_BYTES, "responder.config-bytes")) as unknown as ResponderConfig;
  await startResponder(config);
  process.stdout.write("ready\n");
} catch (e) {
  process.stderr.write(`cairn responder: ${(e as Error).message}\n`);
  process.exit(70);
}
