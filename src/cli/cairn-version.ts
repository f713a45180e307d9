import { readFileSync } from "node:fs";
import { codeFile } from "../core/index.ts";

/** The version of this checkout, from package.json. */
export const CAIRN_VERSION: string = (JSON.parse(readFileSync(codeFile("../package.json"), "utf8")) as { version: string }).version;
