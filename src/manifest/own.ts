/**
 * The entry copy of every model the manifest library is handed. Callers of
 * the library may pass objects that did not come from core's strict reader
 * (JSON.parse output, object literals). Reading `obj.image` on such an object
 * also reads its prototype, so a polluted Object.prototype, or a literal built
 * with `__proto__`, could supply fields that `Object.keys` never shows and no
 * check ever sees. This copy keeps only own enumerable keys, in null-prototype
 * objects, and refuses what JSON cannot hold — so the code after it reads
 * exactly what it checks.
 */
import { CairnError, childPath, type JsonModel, type JsonObject } from "../core/index.ts";

export function ownModel(unsafe: unknown, maxDepth: number, path = "", depth = 0): JsonModel {
  if (unsafe === null || typeof unsafe === "string" || typeof unsafe === "boolean") return unsafe;
  if (typeof unsafe === "number") {
    if (!Number.isFinite(unsafe)) throw new CairnError("JSON_NUMBER", "number is not finite", { path });
    return unsafe;
  }
  if (typeof unsafe !== "object") throw new CairnError("MODEL_TYPE", `a ${typeof unsafe} is not a JSON value`, { path });
  if (depth >= maxDepth) {
    throw new CairnError("LIMIT_EXCEEDED", `limit max_depth exceeded (nested deeper than ${maxDepth})`, {
      path,
      hint: "raise the limit max_depth explicitly if this input is expected",
    });
  }
  if (Array.isArray(unsafe)) return unsafe.map((v, i) => ownModel(v, maxDepth, childPath(path, i), depth + 1));
  const proto = Object.getPrototypeOf(unsafe) as unknown;
  if (proto !== null && proto !== Object.prototype) {
    throw new CairnError("MODEL_TYPE", "only plain objects are JSON objects", { path });
  }
  const out = Object.create(null) as JsonObject;
  for (const k of Object.keys(unsafe)) {
    if (k === "__proto__") {
      throw new CairnError("JSON_PROTO_KEY", 'a "__proto__" key is refused (prototype smuggling)', { path: childPath(path, k) });
    }
    out[k] = ownModel((unsafe as { [k: string]: unknown })[k], maxDepth, childPath(path, k), depth + 1);
  }
  return out;
}
