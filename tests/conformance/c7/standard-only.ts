// A minimal implementation of the standard's environment manifest, written
// from the seed alone (../shared/seeds/000_87a74e0cf9c29a7c.txt, "The
// environment manifest"), with nothing of cairn's: it is the test that C7's
// standard group asks no more than the standard says (standard-only.test.ts).
// Its rules, one line each, with the seed's words they come from:
//
//   parse      devcontainer.json is JSONC ("the open Development Containers
//              specification"): comments and trailing commas, one leading BOM
//              dropped; anything that does not parse is refused.
//   accepted   image, features, containerEnv, mounts, remoteUser ("accepts
//              its declarative subset"); image is the base image reference,
//              required (the core has one; its alternatives are refused).
//   excluded   name, customizations ("cosmetic and editor-facing"), and the
//              networking fields forwardPorts, appPort, portsAttributes,
//              otherPortsAttributes: accepted, not in the core. The seed's
//              "…" names no more; every other field is unknown.
//   refused    build, dockerFile, dockerComposeFile, the lifecycle hooks
//              onCreateCommand, updateContentCommand, postCreateCommand,
//              postStartCommand, postAttachCommand, runArgs, privileged,
//              capAdd, securityOpt, and every unknown field; each is named by
//              its JSON pointer.
//   features   (id, options), options as given (JCS makes them canonical),
//              sorted by id.
//   env        containerEnv as given (JCS sorts its keys).
//   mounts     string form `k=v,k=v` (type, source, target) or object form
//              {type, source, target}, normalized to (source, target, kind),
//              sorted by target; source null when a mount has none.
//   remoteUser the string, null when absent.
//   address    "blake3:" + hex(BLAKE3(JCS(core))), core tagged
//              schema "sandbox.env-manifest/1".
//   pinned     the image and every feature addressed by @sha256:<64 hex>.
//   resume     refused when the addresses differ; equal addresses resume
//              when both are pinned ("never the basis for a same environment
//              claim across hosts"), or when the host accepts unpinned ones.
import { blake3 } from "@noble/hashes/blake3.js";
import { parse, type ParseError } from "jsonc-parser";
import { jcs } from "./jcs.ts";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const ACCEPTED = new Set(["image", "features", "containerEnv", "mounts", "remoteUser"]);
const EXCLUDED = new Set(["name", "customizations", "forwardPorts", "appPort", "portsAttributes", "otherPortsAttributes"]);
// every other key is refused: the seed's list, and unknown fields alike

export type StandardResult =
  | { ok: true; address: string; core: { [k: string]: Json }; pinned: boolean; image_pinned: boolean; unpinned: string[] }
  | { ok: false; paths: string[] };

const pointer = (...parts: (string | number)[]): string => parts.map((p) => `/${String(p).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");
const DIGEST = /@sha256:[0-9a-f]{64}$/;
const isObject = (v: Json | undefined): v is { [k: string]: Json } => typeof v === "object" && v !== null && !Array.isArray(v);
const byCodePoint = (a: string, b: string): number => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

function mount(m: Json, at: string, refuse: (p: string) => void): { source: string | null; target: string; kind: string } | undefined {
  let fields: { [k: string]: Json };
  if (typeof m === "string") {
    fields = {};
    for (const part of m.split(",")) {
      const eq = part.indexOf("=");
      fields[eq < 0 ? part : part.slice(0, eq)] = eq < 0 ? true : part.slice(eq + 1);
    }
  } else if (isObject(m)) fields = m;
  else return void refuse(at);
  const { type, source, target } = fields;
  if (typeof type !== "string" || typeof target !== "string" || (source !== undefined && typeof source !== "string")) return void refuse(at);
  return { source: source ?? null, target, kind: type };
}

/** Ingests devcontainer.json text by the seed's rules alone. */
export function standardIngest(text: string): StandardResult {
  const errors: ParseError[] = [];
  const doc = parse(text.replace(/^\uFEFF/, ""), errors, { allowTrailingComma: true, disallowComments: false }) as Json;
  if (errors.length > 0 || !isObject(doc)) return { ok: false, paths: [""] };
  const refused: string[] = [];
  const refuse = (p: string): void => void refused.push(p);
  for (const k of Object.keys(doc)) if (!ACCEPTED.has(k) && !EXCLUDED.has(k)) refuse(pointer(k));
  const image = doc.image;
  if (typeof image !== "string") refuse("/image");
  const featureMap = doc.features ?? {};
  if (!isObject(featureMap)) refuse("/features");
  const env = doc.containerEnv ?? {};
  if (!isObject(env)) refuse("/containerEnv");
  else for (const [k, v] of Object.entries(env)) if (typeof v !== "string") refuse(pointer("containerEnv", k));
  const mountList = doc.mounts ?? [];
  if (!Array.isArray(mountList)) refuse("/mounts");
  const mounts = Array.isArray(mountList) ? mountList.map((m, i) => mount(m, pointer("mounts", i), refuse)) : [];
  const remoteUser = doc.remoteUser ?? null;
  if (remoteUser !== null && typeof remoteUser !== "string") refuse("/remoteUser");
  if (refused.length > 0) return { ok: false, paths: [...new Set(refused)].sort() };
  const features = Object.entries(featureMap as { [k: string]: Json })
    .map(([id, options]) => ({ id, options }))
    .sort((a, b) => byCodePoint(a.id, b.id));
  const core: { [k: string]: Json } = {
    schema: "sandbox.env-manifest/1",
    image: image as string,
    features,
    containerEnv: env,
    mounts: (mounts as { source: string | null; target: string; kind: string }[]).sort((a, b) => byCodePoint(a.target, b.target)),
    remoteUser,
  };
  const unpinned = [
    ...(DIGEST.test(image as string) ? [] : ["/image"]),
    ...features.flatMap((f, i) => (DIGEST.test(f.id) ? [] : [pointer("features", i, "id")])),
  ];
  return {
    ok: true,
    address: `blake3:${Buffer.from(blake3(Buffer.from(jcs(core), "utf8"))).toString("hex")}`,
    core,
    pinned: unpinned.length === 0,
    image_pinned: !unpinned.includes("/image"),
    unpinned,
  };
}

/** The resume check by the seed's rules: "ok", or which refusal. */
export function standardResume(snapshot: string, offered: string, allowUnpinned: boolean): "ok" | "mismatch" | "unpinned" | "refused-input" {
  const s = standardIngest(snapshot);
  const o = standardIngest(offered);
  if (!s.ok || !o.ok) return "refused-input";
  if (s.address !== o.address) return "mismatch";
  if (!(s.pinned && o.pinned) && !allowUnpinned) return "unpinned";
  return "ok";
}
