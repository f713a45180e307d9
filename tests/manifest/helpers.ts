/** Shared builders for manifest tests: parse JSONC text and ingest it. */
import { parseJsonText, type JsonModel } from "../../src/core/index.ts";
import { buildCore, type BuiltCore } from "../../src/manifest/core.ts";
import { ingestDevcontainer, type EnvManifest } from "../../src/manifest/env-manifest.ts";

export const HEX = (c: string): string => c.repeat(64);
export const PINNED_IMAGE = `mcr.microsoft.com/devcontainers/base@sha256:${HEX("1")}`;
export const TAGGED_IMAGE = "mcr.microsoft.com/devcontainers/base:ubuntu";

export function model(text: string): JsonModel {
  return parseJsonText(text, { jsonc: true });
}

export function ingest(v: JsonModel | string): EnvManifest {
  return ingestDevcontainer(typeof v === "string" ? model(v) : v).manifest;
}

export function core(v: JsonModel | string): BuiltCore {
  return buildCore(typeof v === "string" ? model(v) : v);
}

export function addr(v: JsonModel | string): string {
  return ingest(v).address;
}

/** A devcontainer.json with every identity field set, used as a base for edits. */
export function fullDeclaration(): { [k: string]: JsonModel } {
  return {
    image: PINNED_IMAGE,
    features: {
      [`ghcr.io/devcontainers/features/node@sha256:${HEX("2")}`]: { version: "20", nodeGypDependencies: false },
      "ghcr.io/devcontainers/features/python:1": { version: "3.12" },
    },
    overrideFeatureInstallOrder: ["ghcr.io/devcontainers/features/python", "ghcr.io/devcontainers/features/node"],
    containerEnv: { LANG: "C.UTF-8", TZ: "UTC" },
    remoteEnv: { PATH: "${containerEnv:PATH}:/opt/bin", UNSET_ME: null },
    mounts: ["source=cache,target=/cache,type=volume", { type: "bind", source: "/srv/data", target: "/data" }, "type=tmpfs,target=/scratch"],
    workspaceMount: "source=/srv/src,target=/workspaces/x,type=bind,readonly",
    workspaceFolder: "/workspaces/x",
    containerUser: "root",
    remoteUser: "vscode",
    userEnvProbe: "loginShell",
    init: true,
    overrideCommand: false,
    updateRemoteUserUID: false,
  };
}
