/**
 * The module sets StrykerJS mutates (bench/mutation/stryker.ts), each with the
 * test files that cover it. A set is one run, kept to minutes: the test files
 * are the fast ones that exercise the module directly (no VM boots, no
 * registry servers), so a mutant no listed file kills is a check no fast test
 * needs. These are the modules where a surviving mutant is a security or
 * identity bug (issue 17): canonical bytes, digests, identities, signatures,
 * strict parsers, the tar gate, tree identity, the protocol decoder, the
 * store's publish path, the lockfile and the OCI reader.
 */

export interface MutationSet {
  /** Source files Stryker mutates. */
  readonly mutate: readonly string[];
  /** Test files run against each mutant (each is one node:test process). */
  readonly tests: readonly string[];
}

export const MUTATION_SETS: Readonly<Record<string, MutationSet>> = {
  jcs: {
    mutate: ["src/core/jcs.ts"],
    tests: ["tests/core/jcs.test.ts", "tests/core/json.test.ts", "tests/core/vectors.test.ts", "tests/core/identity-values.test.ts"],
  },
  digest: {
    mutate: ["src/core/digest.ts"],
    tests: ["tests/core/digest.test.ts", "tests/core/crypto.test.ts", "tests/core/identity-values.test.ts", "tests/core/vectors.test.ts"],
  },
  identity: {
    mutate: ["src/core/identity.ts"],
    tests: ["tests/core/identity-rules.test.ts", "tests/core/identity.test.ts", "tests/core/identity-values.test.ts", "tests/core/identities-doc.test.ts"],
  },
  dsse: { mutate: ["src/core/dsse.ts"], tests: ["tests/core/dsse.test.ts", "tests/core/crypto.test.ts", "tests/core/vectors.test.ts"] },
  json: {
    mutate: ["src/core/json.ts"],
    tests: ["tests/core/json-paths.test.ts", "tests/core/json.test.ts", "tests/core/vectors.test.ts", "tests/core/json-nodes.test.ts"],
  },
  yaml: { mutate: ["src/core/yaml.ts"], tests: ["tests/core/yaml-strict.test.ts", "tests/core/json.test.ts", "tests/faults/smaller.test.ts"] },
  "tar-gate": {
    mutate: ["src/tree/tar-gate.ts", "src/tree/tar-fields.ts"],
    tests: ["tests/tree/tar-gate-fields.test.ts", "tests/tree/tar-gate.test.ts", "tests/tree/refusals.test.ts", "tests/tree/policy-limits.test.ts"],
  },
  "fs-digest": {
    mutate: ["src/tree/fs-digest.ts"],
    tests: ["tests/tree/fs-digest-bounds.test.ts", "tests/tree/fs-digest.test.ts", "tests/core/identity-values.test.ts", "tests/core/identities-doc.test.ts"],
  },
  protocol: { mutate: ["src/vm/protocol.ts"], tests: ["tests/vm/protocol-events.test.ts", "tests/vm/protocol.test.ts"] },
  checker: {
    mutate: ["src/vm/checker.ts"],
    tests: [
      "tests/vm/checker.test.ts",
      "tests/vm/protocol.test.ts",
      "tests/vm/status.test.ts",
      "tests/core/identity-values.test.ts",
      "tests/core/identities-doc.test.ts",
    ],
  },
  publish: { mutate: ["src/store/publish.ts"], tests: ["tests/store/publish.test.ts", "tests/store/store.test.ts", "tests/store/publish-durability.test.ts"] },
  "env-id": {
    mutate: ["src/strata/env-id.ts"],
    tests: [
      "tests/strata/spec-wire.test.ts",
      "tests/strata/lockfile.test.ts",
      "tests/strata/scope.test.ts",
      "tests/core/identity-values.test.ts",
      "tests/core/identities-doc.test.ts",
    ],
  },
  lockfile: {
    mutate: ["src/strata/lockfile.ts"],
    // issue 32: the lockfile became Strata's; its rules moved to spec/lock-file.ts (spec-wire) and the records (lockfile.test)
    tests: ["tests/strata/spec-wire.test.ts", "tests/strata/lockfile.test.ts", "tests/strata/freeze-hostile.test.ts", "tests/strata/scope.test.ts"],
  },
  "layout-reader": {
    mutate: ["src/oci/layout-reader.ts"],
    tests: ["tests/oci/layout-reader.test.ts", "tests/oci/source.test.ts", "tests/oci/refusals.test.ts"],
  },
  "manifest-core": {
    mutate: ["src/manifest/core.ts"],
    tests: ["tests/manifest/core-fields.test.ts", "tests/manifest/normalize.test.ts", "tests/manifest/document.test.ts"],
  },
  // Issue 31, case 19: the modules of the checks the tests let go.
  elf: {
    mutate: ["src/workload/elf.ts"],
    // binary-workload.test.ts also reaches the gate, through whole assemblies: too slow per mutant on the loaded machine of issue 31
    tests: ["tests/workload/elf.test.ts", "tests/workload/robustness.test.ts"],
  },
  contents: { mutate: ["src/strata/contents.ts"], tests: ["tests/strata/registry.test.ts", "tests/strata/blob-gate.test.ts"] },
  envelope: {
    mutate: ["src/strata/lockfile-envelope.ts"],
    tests: ["tests/strata/resolver-fixes.test.ts", "tests/strata/lockfile.test.ts"],
  },
  "freeze-index": {
    mutate: ["src/strata/freeze/index-source.ts"],
    tests: ["tests/strata/freeze-hostile.test.ts", "tests/strata/freeze.test.ts", "tests/strata/freeze-cli.test.ts"],
  },
  // Modules other engineers changed during issue 31; run last, after a rebase. The bundle and receipt tests record a VM run per file.
  "network-spec": { mutate: ["src/vm/network-spec.ts"], tests: ["tests/vm/network-spec.test.ts", "tests/vm/run-check.test.ts"] },
  responder: { mutate: ["src/vm/responder.ts", "src/vm/responder-host.ts"], tests: ["tests/vm/responder.test.ts", "tests/vm/network-spec.test.ts"] },
  "registry-transport": { mutate: ["src/oci/registry/registry-transport.ts"], tests: ["tests/registry/auth.test.ts", "tests/registry/image-ref.test.ts"] },
  "bundle-import": { mutate: ["src/vm/bundle-import.ts"], tests: ["tests/vm/bundle.test.ts", "tests/faults/bundle-memory.test.ts"] },
  "run-receipt": { mutate: ["src/vm/run-receipt.ts"], tests: ["tests/vm/receipt.test.ts"] },
};

/** Stryker's sandbox and temp directory: ignored by git and Biome, never under src/ or tests/. */
export const STRYKER_TEMP_DIR = ".stryker-tmp";
/** Where the per-set configuration, log and JSON report go (ignored by git and Biome). */
export const MUTATION_WORK_DIR = "bench/.work/mutation";
