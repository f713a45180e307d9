import { readFileSync } from "node:fs";

/** The version of this checkout, from package.json. */
export const CAIRN_VERSION: string = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
