/**
 * The address scope of an environment manifest. This table is the single
 * definition of what the address covers: every top-level property of
 * `devcontainer.json` (the current spec schema, its legacy spellings, and the
 * one artifact the upstream schema lists by mistake) is placed in exactly one
 * class, with the reason it is there.
 *
 *   identity  — the standard's five fields (`sandbox.env-manifest/1`):
 *               normalized into the manifest core; the address covers it.
 *   extension — execution-relevant fields the standard does not name:
 *               normalized into cairn's extension object
 *               (`cairn.env-extension/1`), which has its own address and
 *               never changes the standard's.
 *   excluded  — accepted and type-checked, but not part of the core: changing
 *               it does not change the address.
 *   refused   — an error, never skipped; the file is not ingested.
 *
 * Any property not in this table is refused as unknown. `buildCore` is driven
 * by this table, so a field cannot be in the core without being placed here,
 * and a test fails when the spec schema lists a property that is missing.
 *
 * Next to the table, `NOT_COVERED` lists what the address deliberately does
 * not cover even for identity fields; the manifest document repeats it so a
 * reader of the JSON sees the limits of the claim. `MANIFEST_ADDRESS_SCOPE`
 * restates the table in the one scope shape every identity uses.
 */
import { declareIdentity, defineScope, type IdentityScope } from "../core/index.ts";

export type ScopeClass = "identity" | "extension" | "excluded" | "refused";

/** The JSON kinds an excluded field may hold (checked, then dropped). */
export type JsonKind = "string" | "boolean" | "integer" | "object" | "array";

export interface FieldScope {
  readonly class: ScopeClass;
  readonly reason: string;
  /** For excluded fields: the kinds the spec allows; anything else is refused. */
  readonly kinds?: readonly JsonKind[];
  /** For excluded fields: the allowed string values, when the spec has an enum. */
  readonly values?: readonly string[];
  /** A legacy spelling that the current spec schema no longer lists. */
  readonly legacy?: true;
}

const LIFECYCLE = "runs a command; cairn never executes anything from an input, and a command's effects are not a declared value an address can cover";
const NETWORK = "the network surface (which ports are published or forwarded, and how a tool shows them) is not the environment's identity";
const BUILD = "builds the image from host files (Dockerfile, context) that the address cannot cover; pin a built image by digest in `image` instead";
const COMPOSE = "Docker Compose environments span several containers and a host-side file the address cannot cover";
const SANDBOX = "widens the sandbox beyond what a declared environment may ask for";

export const FIELD_SCOPE = {
  // ── identity: the standard's core (sandbox.env-manifest/1) ─────────────
  image: { class: "identity", reason: "the base of the environment; pinned only when addressed by @sha256" },
  features: {
    class: "identity",
    reason: "software added on top of the image; (id, JCS-canonical options) sorted by id; OCI ids lowercased as the devcontainers CLI does, others as written",
  },
  containerEnv: { class: "identity", reason: "environment every process in the container sees; sorted by name" },
  mounts: {
    class: "identity",
    reason: "what is mounted where (source, target, kind), sorted by target; not the contents (the read-only flag is in the extension)",
  },
  remoteUser: { class: "identity", reason: "the user a tool's processes run as in the container (null when absent)" },

  // ── extension: cairn.env-extension/1, its own address ────────────────────
  overrideFeatureInstallOrder: {
    class: "extension",
    reason: "install order changes the resulting filesystem when features touch the same files; order is kept",
  },
  remoteEnv: { class: "extension", reason: "environment of the processes a tool starts in the container (null unsets); sorted by name" },
  workspaceMount: { class: "extension", reason: "the workspace mount is a mount like any other: same normalization, same refusals" },
  workspaceFolder: { class: "extension", reason: "the working directory of the workload and the value of ${containerWorkspaceFolder}" },
  containerUser: { class: "extension", reason: "the user every container process runs as, which decides permissions and home directory" },
  userEnvProbe: { class: "extension", reason: "decides which shell startup files shape the environment of remote processes" },
  init: { class: "extension", reason: "decides what runs as PID 1 (an init that reaps zombies and forwards signals, or not)" },
  overrideCommand: { class: "extension", reason: "decides whether the image's own command runs as the container's main process" },
  updateRemoteUserUID: {
    class: "extension",
    reason: "decides whether the remote user's UID/GID are rewritten to the host user's (the host's values are not covered)",
  },

  // ── excluded: accepted, checked, not in the address ─────────────────────
  name: { class: "excluded", reason: "a display name; renaming an environment does not change it", kinds: ["string"] },
  customizations: { class: "excluded", reason: "tool-specific settings (editor extensions, UI); tools' state, not the environment", kinds: ["object"] },
  forwardPorts: { class: "excluded", reason: NETWORK, kinds: ["array"] },
  appPort: { class: "excluded", reason: NETWORK, kinds: ["integer", "string", "array"] },
  portsAttributes: { class: "excluded", reason: NETWORK, kinds: ["object"] },
  otherPortsAttributes: { class: "excluded", reason: NETWORK, kinds: ["object"] },
  shutdownAction: {
    class: "excluded",
    reason: "what a tool does when the user disconnects is session behaviour, not the environment",
    kinds: ["string"],
    values: ["none", "stopContainer"],
  },
  hostRequirements: {
    class: "excluded",
    reason: "a request to the host (CPUs, memory, GPU); the host is not covered and cairn does not check it",
    kinds: ["object"],
  },
  secrets: {
    class: "excluded",
    reason: "names of secrets a tool should ask for; their values are supplied at run time and must never enter a manifest",
    kinds: ["object"],
  },
  waitFor: {
    class: "excluded",
    reason: "which lifecycle command a tool waits for; lifecycle commands are refused, so it only affects UI timing",
    kinds: ["string"],
    values: ["initializeCommand", "onCreateCommand", "updateContentCommand", "postCreateCommand", "postStartCommand"],
  },
  $schema: { class: "excluded", reason: "an editor hint naming the JSON schema of the file", kinds: ["string"] },
  extensions: {
    class: "excluded",
    reason: "legacy spelling of customizations.vscode.extensions; excluded like customizations",
    kinds: ["array"],
    legacy: true,
  },
  settings: { class: "excluded", reason: "legacy spelling of customizations.vscode.settings; excluded like customizations", kinds: ["object"], legacy: true },
  devPort: { class: "excluded", reason: `legacy editor-server port; ${NETWORK}`, kinds: ["integer"], legacy: true },
  codespaces: { class: "excluded", reason: "legacy GitHub Codespaces settings; tool-specific like customizations", kinds: ["object"], legacy: true },

  // ── refused: an error, never skipped ─────────────────────────────────────
  build: { class: "refused", reason: BUILD },
  dockerFile: { class: "refused", reason: BUILD },
  context: { class: "refused", reason: BUILD },
  dockerComposeFile: { class: "refused", reason: COMPOSE },
  service: { class: "refused", reason: COMPOSE },
  runServices: { class: "refused", reason: COMPOSE },
  initializeCommand: { class: "refused", reason: `${LIFECYCLE}; this one even runs on the host` },
  onCreateCommand: { class: "refused", reason: LIFECYCLE },
  updateContentCommand: { class: "refused", reason: LIFECYCLE },
  postCreateCommand: { class: "refused", reason: LIFECYCLE },
  postStartCommand: { class: "refused", reason: LIFECYCLE },
  postAttachCommand: { class: "refused", reason: LIFECYCLE },
  runArgs: { class: "refused", reason: `passes arbitrary flags to the container engine; ${SANDBOX}` },
  privileged: { class: "refused", reason: `gives the container the host's devices and every capability; ${SANDBOX}` },
  capAdd: { class: "refused", reason: `adds kernel capabilities; ${SANDBOX}` },
  securityOpt: { class: "refused", reason: `changes seccomp/AppArmor/SELinux confinement; ${SANDBOX}` },
  additionalProperties: {
    class: "refused",
    reason: "not a devcontainer property: the upstream schema lists its own `additionalProperties` keyword under `properties` by mistake",
  },
} as const satisfies Record<string, FieldScope>;

export type ScopedField = keyof typeof FIELD_SCOPE;
export type IdentityField = { [K in ScopedField]: (typeof FIELD_SCOPE)[K]["class"] extends "identity" ? K : never }[ScopedField];
export type ExtensionField = { [K in ScopedField]: (typeof FIELD_SCOPE)[K]["class"] extends "extension" ? K : never }[ScopedField];
/** Every field that is normalized (into the standard's core or cairn's extension). */
export type NormalizedField = IdentityField | ExtensionField;

/**
 * The standard's schema tag, hashed as part of every manifest core. It is the
 * standard's name, not cairn's: every conforming implementation hashes the
 * same tag, so the same file has one address everywhere.
 */
export const MANIFEST_SCHEMA = "sandbox.env-manifest/1";

/** cairn's extension object: the execution-relevant fields the standard does not name. */
export const EXTENSION_SCHEMA = "cairn.env-extension/1";

/** The manifest document (cairn's file format holding core, extension, addresses, labels, signature). */
export const MANIFEST_DOCUMENT_SCHEMA = "cairn.env-manifest/2";

/** The standard's address: BLAKE3 of the core's JCS bytes; the core carries `schema` itself, as the standard fixes it. */
export const MANIFEST_ADDRESS = declareIdentity({
  name: "environment manifest address",
  tag: MANIFEST_SCHEMA,
  algorithm: "blake3",
  framing: "jcs-own-schema",
  role: "identity",
  definedIn: "src/manifest/scope.ts",
});

/** The extension's address, framed exactly like the standard's (the object carries its own `schema`). */
export const EXTENSION_ADDRESS = declareIdentity({
  name: "environment manifest extension address",
  tag: EXTENSION_SCHEMA,
  algorithm: "blake3",
  framing: "jcs-own-schema",
  role: "identity",
  definedIn: "src/manifest/scope.ts",
});

/** What a manifest signature covers: both addresses, so one signature binds the core and the extension. */
export const MANIFEST_SIGNED = declareIdentity({
  name: "environment manifest signed statement",
  tag: "cairn.env-manifest-signed/1",
  algorithm: "blake3",
  framing: "tag-nul-jcs",
  role: "integrity",
  definedIn: "src/manifest/scope.ts",
});

function addressScope(): IdentityScope {
  const covers: Record<string, string> = { "/schema": "the manifest core's own version, hashed in front of the content" };
  const excludes: Record<string, string> = {};
  for (const [field, s] of Object.entries(FIELD_SCOPE) as [string, FieldScope][]) {
    if (s.class === "identity") covers[`/${field}`] = s.reason;
    else if (s.class === "extension") excludes[`/${field}`] = `in cairn's extension object (${EXTENSION_SCHEMA}), addressed separately: ${s.reason}`;
    else if (s.class === "excluded") excludes[`/${field}`] = s.reason;
    else excludes[`/${field}`] = `refused, so never part of a manifest: ${s.reason}`;
  }
  return { identity: MANIFEST_SCHEMA, covers, excludes };
}

/**
 * FIELD_SCOPE as an identity scope: fields of a devcontainer.json (and the
 * core's `schema`). Covered are the identity fields; excluded fields and
 * refused fields are not covered (a refused field stops the ingest).
 */
export const MANIFEST_ADDRESS_SCOPE = defineScope(addressScope());

function extensionScope(): IdentityScope {
  const covers: Record<string, string> = {
    "/schema": "the extension's own version, hashed in front of the content",
    "/read_only_mounts": "the targets of the mounts declared read-only (the standard's mount tuple has no read-only flag), sorted",
    "/feature_closure":
      "with a lockfile whose features depend on others: the resolved references (by digest) of the features the dependsOn closure adds, sorted; omitted otherwise",
    "/local_features":
      "with --features-dir: each local feature id → the cairn.fs/1 digest of its directory (owner 0:0, mtime 0, modes as git keeps them), which pins it; omitted otherwise",
  };
  // Fields of the extension object only; the standard's fields are in MANIFEST_ADDRESS_SCOPE.
  const excludes: Record<string, string> = {};
  for (const [field, s] of Object.entries(FIELD_SCOPE) as [string, FieldScope][]) {
    if (s.class === "extension") covers[`/${field}`] = s.reason;
  }
  return { identity: EXTENSION_SCHEMA, covers, excludes };
}

/** The extension object's scope: the fields the standard does not name, the mounts' read-only flag, and local feature pins. */
export const EXTENSION_ADDRESS_SCOPE = defineScope(extensionScope());

/**
 * What the address does not cover, even for identity fields. Frozen for
 * `cairn.env-manifest/2`: readers compare a document's `not_covered` with this
 * list, so changing it means a new schema tag. Stated in the
 * manifest document (`not_covered`) and in docs/manifest.md.
 */
export const NOT_COVERED: readonly string[] = [
  "mount contents: only each mount's source, target and kind (and, in the extension, its read-only flag) are covered, never the bytes behind the source",
  "the workspace: the host folder a tool mounts by default when workspaceMount is absent, and the contents of any workspace mount",
  "bytes behind unpinned references: an image or feature addressed by tag, URL, release version or local path may resolve to different bytes later",
  "image-label metadata (devcontainer.metadata) and feature-contributed metadata (env, mounts, entrypoints, capabilities a feature declares)",
  "the host: kernel, container engine, CPU, and the host user's UID/GID when updateRemoteUserUID applies",
  "execution-relevant fields the standard does not name: they are in the extension object, under its own address, never in the standard's",
  "excluded fields (host substitutions in them are accepted, since they never reach the address): name, customizations, networking (forwardPorts, appPort, portsAttributes, otherPortsAttributes), shutdownAction, hostRequirements, secrets, waitFor, $schema and the legacy extensions, settings, devPort, codespaces",
  "mount consistency hints (consistency=cached|delegated|consistent), which have no effect on Linux",
];

export function scopeOf(field: string): FieldScope | undefined {
  return Object.hasOwn(FIELD_SCOPE, field) ? (FIELD_SCOPE as Record<string, FieldScope>)[field] : undefined;
}

export function fieldsOfClass(cls: ScopeClass): string[] {
  return Object.keys(FIELD_SCOPE).filter((k) => (FIELD_SCOPE as Record<string, FieldScope>)[k]!.class === cls);
}
