/**
 * Installs to capture, made at test time: a conda environment as conda
 * leaves one (conda-meta/history naming the prefix, a package record listing
 * its files and the ones conda wrote the prefix into, a shebang script, a .pc
 * file, an absolute symlink into the env and an ELF built here with gcc whose
 * RPATH and a string name the prefix), and an Lmod tree (modulefiles and the
 * software they point to).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./fixtures.ts";

export interface CondaFixture {
  /** The environment's directory (its prefix, a real path). */
  readonly dir: string;
  readonly prefix: string;
}

/** A conda environment at a fresh directory; `cmd` is the history's `# cmd:` line (default: created with --prefix at its own path). */
export function condaEnv(opts: { cmd?: (prefix: string) => string; elf?: boolean; record?: Record<string, unknown> } = {}): CondaFixture {
  const dir = join(realpathSync(tempDir("cairn-conda-")), "envs", "sci");
  const p = (...x: string[]) => join(dir, ...x);
  for (const d of ["conda-meta", "bin", "lib/pkgconfig", "share/doc"]) mkdirSync(p(d), { recursive: true });
  const cmd = opts.cmd ?? ((prefix) => `/opt/conda/bin/conda create --prefix ${prefix} python=3.12 -y`);
  writeFileSync(
    p("conda-meta", "history"),
    `==> 2026-01-02 03:04:05 <==\n# cmd: ${cmd(dir)}\n# conda version: 24.1.2\n+conda-forge/linux-64::python-3.12.1-hab00c5b_1_cpython\n`,
  );
  writeFileSync(p("bin", "pip"), `#!${dir}/bin/python3.12\n# -*- coding: utf-8 -*-\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n`, {
    mode: 0o755,
  });
  writeFileSync(p("bin", "python3.12"), "#!/bin/sh\necho python 3.12\n", { mode: 0o755 });
  symlinkSync("python3.12", p("bin", "python3"));
  writeFileSync(p("lib", "pkgconfig", "python-3.12.pc"), `prefix=${dir}\nexec_prefix=\${prefix}\nlibdir=\${exec_prefix}/lib\nName: Python\nVersion: 3.12\n`);
  writeFileSync(p("lib", "libpython3.12.so.1.0"), "not really a library\n");
  symlinkSync(`${dir}/lib/libpython3.12.so.1.0`, p("lib", "libpython3.12.so"));
  // A longer name that starts with the prefix is another path: never rewritten.
  writeFileSync(p("share", "doc", "NOTES"), `old copy at ${dir}-old/bin and ${dir}2\n`);
  const files = ["bin/pip", "bin/python3", "bin/python3.12", "lib/libpython3.12.so", "lib/libpython3.12.so.1.0", "lib/pkgconfig/python-3.12.pc"];
  const placeholder = "/opt/anaconda1anaconda2anaconda3";
  const paths = files.map((f) => ({
    _path: f,
    path_type: f.endsWith(".so") || f === "bin/python3" ? "softlink" : "hardlink",
    ...(f === "bin/pip" || f.endsWith(".pc") ? { prefix_placeholder: placeholder, file_mode: "text" } : {}),
  }));
  if (opts.elf !== false) {
    const src = join(tempDir("cairn-conda-src-"), "hello.c");
    writeFileSync(src, `#include <stdio.h>\nstatic const char *data = "${dir}/share/hello";\nint main(void) { puts(data); return 0; }\n`);
    execFileSync("gcc", ["-O0", "-o", p("bin", "hello"), src, `-Wl,-rpath,${dir}/lib`]);
    files.push("bin/hello");
    paths.push({ _path: "bin/hello", path_type: "hardlink", prefix_placeholder: placeholder, file_mode: "binary" });
  }
  const record = {
    name: "python",
    version: "3.12.1",
    build: "hab00c5b_1_cpython",
    build_number: 1,
    channel: "https://conda.anaconda.org/conda-forge/linux-64",
    subdir: "linux-64",
    files,
    paths_data: { paths_version: 1, paths },
    requested_spec: "python=3.12",
    ...opts.record,
  };
  writeFileSync(p("conda-meta", "python-3.12.1-hab00c5b_1_cpython.json"), `${JSON.stringify(record, null, 1)}\n`);
  return { dir, prefix: dir };
}

export interface LmodFixture {
  /** The Lmod tree's root (holds modulefiles/ and software/). */
  readonly tree: string;
  /** The software root the modulefile names. */
  readonly root: string;
  readonly modulefile: string;
}

/** An Lmod tree with module hello/1.0, in Lua (default) or Tcl. */
export function lmodTree(kind: "lua" | "tcl" = "lua", text?: (root: string) => string): LmodFixture {
  const tree = realpathSync(tempDir("cairn-lmod-"));
  const root = join(tree, "software", "hello", "1.0");
  mkdirSync(join(root, "bin"), { recursive: true });
  mkdirSync(join(root, "share"), { recursive: true });
  writeFileSync(join(root, "bin", "hello"), `#!/bin/sh\necho "hello from $HELLO_ROOT, data in $(cat ${root}/share/where)"\n`, { mode: 0o755 });
  writeFileSync(join(root, "share", "where"), `${root}/share\n`);
  mkdirSync(join(tree, "modulefiles", "hello"), { recursive: true });
  const modulefile = join(tree, "modulefiles", "hello", kind === "lua" ? "1.0.lua" : "1.0");
  const body =
    text?.(root) ??
    (kind === "lua"
      ? `-- hello 1.0\nwhatis("Name: hello")\nlocal root = "${root}"\nprepend_path("PATH", pathJoin(root, "bin"))\nsetenv("HELLO_ROOT", root)\n`
      : `#%Module1.0\nset root ${root}\nprepend-path PATH $root/bin\nsetenv HELLO_ROOT $root\n`);
  writeFileSync(modulefile, body);
  return { tree, root, modulefile };
}
