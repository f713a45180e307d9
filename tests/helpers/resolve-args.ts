/** The `cairn resolve` arguments that resolve a profile against an example registry (examples/strata/build-registry.ts), signed with its lock key. */
import { join } from "node:path";
import type { ExampleRegistry } from "../../examples/strata/build-registry.ts";
export function resolveArgs(ex: ExampleRegistry, profile: string, out: string, extra: readonly string[] = []): string[] {
  return [
    "resolve",
    profile,
    "--registry",
    ex.registry,
    "--trust",
    `keyfile://${ex.root}/registry.pub`,
    "--base",
    `rootfs:${ex.rootfs}`,
    "--sign",
    join(ex.root, "lock.key"),
    "--out",
    out,
    ...extra,
  ];
}
