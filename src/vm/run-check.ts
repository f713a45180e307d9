/**
 * `cairn workload check` checks what `cairn run` will check: assembly's
 * rules (workload/image-check.ts) and, through the `RunCheck` given here,
 * the runs code's own, each by its one definition: the run section
 * (`parseScenario`), the run's inputs (`readRunInputs`, `mergeRunInputs`),
 * the directory the http responder serves (`readHttpRoot`), the guest's
 * sizing by root (`sizeGuest`: the root chosen, `vm.image-bytes` on the tree
 * and on the root disk) and the runtime overlay's and Linux's
 * rules on the tree (`checkOverlay`, `checkLinuxNames`). A spec that check
 * passes is refused by run only for what check cannot see: the guest kit's
 * own bytes in the initramfs (its agent and modules, a few MiB, against
 * `vm.image-bytes` of an initramfs root), the host's free space where the
 * run is written, and what happens in the guest.
 */
import { dirname } from "node:path";
import { checkWorkload, type CheckResult, type RunCheck } from "../workload/index.ts";
import type { CanonicalTree } from "../tree/index.ts";
import { checkLinuxNames, checkOverlay } from "./initramfs.ts";
import { readHttpRoot } from "./responder-host.ts";
import { mergeRunInputs, readRunInputs, runHostScope, type RunInputScope, type RunInputTree } from "./run-inputs.ts";
import { parseScenario, type Scenario } from "./scenario.ts";
import { sizeGuest } from "./sizing.ts";

/** Runs `check`, returning what it threw (a refusal) as the one problem it found. */
function refusals(check: () => void): unknown[] {
  try {
    check();
    return [];
  } catch (e) {
    return [e];
  }
}

/** The runs code's checks for one spec, in the order `cairn run` makes them. */
export function runCheck(opts: { readonly inputsRoot?: string } = {}): RunCheck {
  let scenario: Scenario | undefined;
  let inputs: RunInputTree | undefined;
  return {
    section(spec, specPath) {
      const found = refusals(() => {
        scenario = parseScenario(spec.run);
      });
      // the host paths the spec names, in the scope `cairn run` reads them in (the spec's directory, or --inputs-root)
      const scope: RunInputScope = { base: dirname(specPath), ...(opts.inputsRoot !== undefined ? { root: opts.inputsRoot } : {}) };
      if (scenario?.inputs !== undefined) {
        const wanted = scenario.inputs;
        found.push(
          ...refusals(() => {
            inputs = readRunInputs(wanted, scope);
          }),
        );
      }
      // the directory the http responder serves: read by run before the guest is built, by the same reader
      const http = scenario?.network?.http;
      if (http !== undefined) found.push(...refusals(() => readHttpRoot(http.unsafeRoot, runHostScope(scope))));
      return found;
    },
    tree(workloadTree) {
      // a run section that does not parse leaves nothing to size (its problems are listed already)
      const s = scenario;
      if (s === undefined) return [];
      let tree: CanonicalTree = workloadTree;
      const merged = refusals(() => {
        if (inputs !== undefined) tree = mergeRunInputs(workloadTree, inputs);
      });
      if (merged.length > 0) return merged;
      return [
        ...refusals(() => sizeGuest(tree, s)),
        ...refusals(() => checkOverlay(tree, { proc: s.proc === true })),
        ...refusals(() => checkLinuxNames(tree)),
      ];
    },
  };
}

/** What `cairn workload check` reports: assembly's problems and run's, in the order run meets them. */
export function checkWorkloadRun(opts: { readonly specPath: string; readonly inputsRoot?: string }): Promise<CheckResult> {
  return checkWorkload({
    specPath: opts.specPath,
    run: runCheck(opts.inputsRoot !== undefined ? { inputsRoot: opts.inputsRoot } : {}),
    ...(opts.inputsRoot !== undefined ? { hostRoot: opts.inputsRoot } : {}),
  });
}
