/**
 * What an interrupted run does (SIGINT, SIGTERM, SIGHUP of cairn): one
 * handler runs every registered cleanup, the last registered first, then
 * ends the process as the signal asked (the default action, our handler
 * removed). A run registers in the order it starts things: its staging
 * directory, the responder, QEMU; so QEMU's process group (and the gates
 * its guestfwd runs, which write into the responder's directory) is gone
 * before the responder's directory is removed, and the staging directory
 * goes last. One handler, not one per part: with several, each part's
 * handler ran in registration order and the first to re-raise the signal
 * decided what the rest could still do.
 */

const INTERRUPTS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

type Cleanup = (signal: NodeJS.Signals) => void;

const cleanups: Cleanup[] = [];

function onSignal(signal: NodeJS.Signals): void {
  const run = cleanups.splice(0).reverse();
  for (const s of INTERRUPTS) process.removeListener(s, onSignal);
  for (const cleanup of run) {
    try {
      cleanup(signal);
    } catch {
      // one cleanup's failure does not keep the others from running
    }
  }
  process.kill(process.pid, signal);
}

/** Registers `cleanup` to run if the process is interrupted; the returned function unregisters it (idempotent). */
export function onInterrupt(cleanup: Cleanup): () => void {
  if (cleanups.length === 0) for (const s of INTERRUPTS) process.on(s, onSignal);
  cleanups.push(cleanup);
  return () => {
    const i = cleanups.indexOf(cleanup);
    if (i < 0) return;
    cleanups.splice(i, 1);
    if (cleanups.length === 0) for (const s of INTERRUPTS) process.removeListener(s, onSignal);
  };
}
