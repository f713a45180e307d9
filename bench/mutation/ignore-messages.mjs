// A StrykerJS ignorer: mutants inside the human text of a refusal are
// reported as "Ignored" with a reason instead of counted. cairn's tests assert
// error codes and paths, never messages (docs/testing.md), so such a mutant
// changes nothing a test may check. Ignored, and only these:
//   - the message of `new CairnError(code, message, …)` and its `hint`, the
//     message of `new TypeError(message)` (and RangeError, Error);
//   - the message argument of a module's own refusal helper (yaml.ts
//     `refuse(issues, code, message, path)`, tar-gate.ts and tar-fields.ts
//     `refuse(code, message, where, hint)` message and hint, protocol.ts `bad(offset, check,
//     message)`);
//   - the message of a Checker issue, `x.add(path, message, code)`, and the
//     words of `x.done(what, hint)` (core/model.ts);
//   - helpers that only build message text (json.ts `lineCol`, yaml.ts
//     `where`, `problemKind`, `position`, layout-reader.ts `kind`).
// The code, the path and the decision to throw stay mutated.
// Plain JavaScript because Stryker imports plugins without tsx; the plugin
// record is what @stryker-mutator/api's declareValuePlugin returns.

const REASON = "error message text: tests assert codes and paths, never messages (docs/testing.md)";
const NEW_MESSAGE = { CairnError: [1], TypeError: [0], RangeError: [0], Error: [0] };
const CALL_MESSAGE = {
  "src/core/yaml.ts": { refuse: [2] },
  "src/tree/tar-gate.ts": { refuse: [1, 3] },
  // the same helper, moved with the header field decoding out of tar-gate.ts
  "src/tree/tar-fields.ts": { refuse: [1, 3] },
  "src/vm/protocol.ts": { bad: [2] },
  "src/tree/fs-digest.ts": { refuse: [1] },
};
const MESSAGE_HELPERS = {
  "src/core/json.ts": ["lineCol"],
  "src/core/yaml.ts": ["where", "problemKind", "position"],
  "src/oci/layout-reader.ts": ["kind"],
};

function fileOf(path) {
  const name = path.hub?.file?.opts?.filename ?? "";
  const i = name.lastIndexOf("/src/");
  return i < 0 ? name : name.slice(i + 1);
}

function calleeName(node) {
  return node?.callee?.type === "Identifier" ? node.callee.name : undefined;
}

function checkerText(parent, key) {
  const callee = parent?.type === "CallExpression" ? parent.callee : undefined;
  if (callee?.type !== "MemberExpression" || callee.property?.type !== "Identifier") return false;
  if (callee.property.name === "add") return parent.arguments.length >= 2 && key === 1;
  return callee.property.name === "done";
}

function messageArgument(path, file) {
  if (path.listKey !== "arguments" || typeof path.key !== "number") return false;
  const parent = path.parentPath?.node;
  if (checkerText(parent, path.key)) return true;
  const name = calleeName(parent);
  if (name === undefined) return false;
  if (parent.type === "NewExpression") return NEW_MESSAGE[name]?.includes(path.key) ?? false;
  if (parent.type === "CallExpression") return CALL_MESSAGE[file]?.[name]?.includes(path.key) ?? false;
  return false;
}

function hintProperty(path) {
  const node = path.node;
  if (node?.type !== "ObjectProperty" || node.key?.type !== "Identifier" || node.key.name !== "hint") return false;
  const options = path.parentPath;
  return options?.listKey === "arguments" && options.key === 2 && calleeName(options.parentPath?.node) === "CairnError";
}

const ignorer = {
  shouldIgnore(path) {
    const file = fileOf(path);
    if (messageArgument(path, file) || hintProperty(path)) return REASON;
    if (path.node?.type === "FunctionDeclaration" && MESSAGE_HELPERS[file]?.includes(path.node.id?.name)) {
      return "builds error message text only: tests assert codes and paths, never messages (docs/testing.md)";
    }
    return undefined;
  },
};

export const strykerPlugins = [{ kind: "Ignore", name: "error-messages", value: ignorer }];
