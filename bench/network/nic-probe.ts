/**
 * Which emulated NIC, under which icount setting, records and replays with
 * this QEMU (issue 14, items 2 and 4)? A measurement, not a cairn run: a
 * throwaway guest (nic-probe.c as PID 1, built with gcc -static) on the
 * kit's kernel makes five HTTP requests through QEMU user-mode networking
 * (`restrict=on`, one guestfwd to a host responder started per connection)
 * with `-object filter-replay` on the netdev. Each configuration boots
 * plain, records, then replays twice with the responder's path pointing at
 * nothing (a replay must not need it). A replay passes when it ends within
 * the timeout and its console RESULT lines equal the record's.
 *
 *   node --import tsx bench/network/nic-probe.ts [--only=<label part>] [--timeout=S]
 *
 * Needs the kit (tests/vm/fixtures/kit.ts) and apt-get access to the kit
 * kernel's Debian package, from which the NIC modules are read: the kit
 * keeps only the protocol port's modules. The package's kernel must have
 * the kit kernel's digest, so the modules match it.
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256 } from "../../src/core/index.ts";
import { CpioWriter, S_IFDIR, S_IFREG } from "../../src/vm/index.ts";
import { readKitObject } from "../../src/vm/kit.ts";
import { testKit, TEST_KIT_DIR } from "../../tests/vm/fixtures/kit.ts";

const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);
const timeoutS = Number(process.argv.find((a) => a.startsWith("--timeout="))?.slice("--timeout=".length) ?? "180");

interface Config {
  readonly label: string;
  /** the -device value without netdev=, or undefined for no NIC */
  readonly nic?: string;
  /** module paths below lib/modules/<abi>/kernel/, in load order */
  readonly modules: readonly string[];
  readonly icount: string;
}

const VIRTIO_NET = ["net/core/failover.ko", "drivers/net/net_failover.ko", "drivers/net/virtio_net.ko"];
const VIRTIO_PCI = ["virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci"].map((m) => `drivers/virtio/${m}.ko`);
const VMXNET3 = ["drivers/net/vmxnet3/vmxnet3.ko"];

const CONFIGS: readonly Config[] = [
  { label: "no NIC, shift=3,sleep=off (today's runs)", modules: [], icount: "shift=3,sleep=off" },
  { label: "virtio-net-pci ioeventfd=off, shift=3", nic: "virtio-net-pci,ioeventfd=off", modules: [...VIRTIO_PCI, ...VIRTIO_NET], icount: "shift=3" },
  { label: "vmxnet3, shift=3,sleep=off", nic: "vmxnet3", modules: VMXNET3, icount: "shift=3,sleep=off" },
  { label: "vmxnet3, shift=3 (sleep=on)", nic: "vmxnet3", modules: VMXNET3, icount: "shift=3" },
  { label: "vmxnet3, shift=auto", nic: "vmxnet3", modules: VMXNET3, icount: "shift=auto" },
];

/** The kit kernel's package, downloaded into `work`, unpacked there; returns the modules root. */
function kernelPackage(work: string, packageFile: string, kernelDigest: string): string {
  const name = packageFile.replace(/_.*$/, "");
  execFileSync("apt-get", ["download", "-q", name], { cwd: work, stdio: "pipe" });
  const deb = readdirSync(work).find((f) => f.endsWith(".deb"));
  if (deb === undefined) throw new Error(`apt-get download ${name} gave no package`);
  const root = join(work, "pkg");
  execFileSync("sh", ["-c", `mkdir -p pkg && dpkg-deb --fsys-tarfile "$1" | tar -x -C pkg ./boot ./lib/modules`, "sh", deb], { cwd: work });
  const vmlinuz = readdirSync(join(root, "boot")).find((f) => f.startsWith("vmlinuz-"))!;
  const digest = sha256(readFileSync(join(root, "boot", vmlinuz)));
  if (digest !== kernelDigest) throw new Error(`${deb} holds kernel ${digest}, the kit's is ${kernelDigest}: refresh the kit or the package lists`);
  const abi = readdirSync(join(root, "lib", "modules"))[0]!;
  return join(root, "lib", "modules", abi, "kernel");
}

function initramfs(out: string, init: Buffer, modules: readonly Buffer[]): void {
  const chunks: Buffer[] = [];
  const w = new CpioWriter({ write: (b) => void chunks.push(Buffer.from(b)) });
  const meta = { uid: 0, gid: 0, mtime: 0 };
  w.add({ name: "dev", mode: S_IFDIR | 0o755, ...meta });
  w.add({ name: "m", mode: S_IFDIR | 0o755, ...meta });
  w.add({ name: "init", mode: S_IFREG | 0o755, data: init, ...meta });
  for (const [i, m] of modules.entries()) w.add({ name: `m/${String(i).padStart(2, "0")}.ko`, mode: S_IFREG | 0o644, data: m, ...meta });
  w.finish();
  writeFileSync(out, Buffer.concat(chunks));
}

interface Boot {
  readonly seconds: number;
  readonly timedOut: boolean;
  readonly results: string;
  readonly logBytes?: number;
}

function boot(work: string, kernel: string, c: Config, mode: "none" | "record" | "replay", responder: string, tag: string): Promise<Boot> {
  const rr = join(work, `${tag}.rr`);
  const consoleLog = join(work, `${tag}.${mode}.${Date.now()}.console`);
  const icount = mode === "none" ? c.icount : `${c.icount},rr=${mode},rrfile=${rr}`;
  const args = [
    ...["-nodefaults", "-no-user-config", "-display", "none", "-machine", "q35,accel=tcg", "-cpu", "max", "-m", "256", "-smp", "1", "-no-reboot"],
    ...["-kernel", kernel, "-initrd", join(work, `${tag}.cpio`), "-append", "console=ttyS0 panic=-1 quiet"],
    ...["-rtc", "base=2020-01-01T00:00:00,clock=vm", "-icount", icount],
    ...["-chardev", `file,id=s0,path=${consoleLog}`, "-serial", "chardev:s0", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"],
  ];
  if (c.nic !== undefined) {
    args.push("-netdev", `user,id=n0,restrict=on,net=10.0.2.0/24,host=10.0.2.2,guestfwd=tcp:10.0.2.100:80-cmd:${responder}`);
    args.push("-device", `${c.nic},netdev=n0`);
    if (mode !== "none") args.push("-object", "filter-replay,id=rep0,netdev=n0");
  }
  const started = process.hrtime.bigint();
  return new Promise((resolve) => {
    const child = spawn("qemu-system-x86_64", args, { detached: true, stdio: "ignore" });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      process.kill(-child.pid!, "SIGKILL");
    }, timeoutS * 1000);
    child.on("close", () => {
      clearTimeout(timer);
      const text = readFileSync(consoleLog, "utf8").replaceAll("\r", "");
      const results = text
        .split("\n")
        .filter((l) => l.startsWith("RESULT"))
        .join("; ");
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      resolve({ seconds, timedOut, results, logBytes: mode === "record" ? statSync(rr).size : undefined });
    });
  });
}

async function main(): Promise<void> {
  const kit = await testKit();
  const work = mkdtempSync(join(tmpdir(), "cairn-nic-probe-"));
  try {
    const kernel = readKitObject(TEST_KIT_DIR, "kernels", kit.kernel.digest, "/kernel").path;
    const modulesRoot = kernelPackage(work, kit.kernel.package, kit.kernel.digest);
    const init = join(work, "init");
    execFileSync("gcc", ["-static", "-O2", "-o", init, join(import.meta.dirname, "nic-probe.c")]);
    // the responder QEMU starts per connection: reads the 27-byte request, answers
    const responder = join(work, "responder.sh");
    writeFileSync(responder, "#!/bin/sh\nhead -c 27 >/dev/null\nprintf 'HTTP/1.0 200 OK\\r\\nContent-Length: 23\\r\\n\\r\\nhello over the network\\n'\n");
    chmodSync(responder, 0o755);
    const absent = join(work, "no-responder-here.sh");
    const rows: string[] = [];
    for (const [i, c] of CONFIGS.entries()) {
      if (only !== undefined && !c.label.includes(only)) continue;
      const tag = `c${i}`;
      initramfs(
        join(work, `${tag}.cpio`),
        readFileSync(init),
        c.modules.map((m) => readFileSync(join(modulesRoot, m))),
      );
      const plain = await boot(work, kernel, c, "none", responder, tag);
      const record = await boot(work, kernel, c, "record", responder, tag);
      const replays = [await boot(work, kernel, c, "replay", absent, tag), await boot(work, kernel, c, "replay", absent, tag)];
      const verdict = replays.map((r) => (r.timedOut ? `hang (killed at ${timeoutS} s)` : r.results === record.results ? "matches" : "differs"));
      const fmt = (b: Boot) => (b.timedOut ? `>${timeoutS}` : b.seconds.toFixed(1));
      rows.push(
        `| ${c.label} | ${fmt(plain)} | ${fmt(record)} | ${replays.map(fmt).join(" / ")} | ${((record.logBytes ?? 0) / 1024).toFixed(0)} | ${verdict.join(" / ")} | ${record.results} |`,
      );
      console.error(rows.at(-1));
    }
    console.log("| configuration | plain s | record s | replay s (1 / 2) | replay log KiB | replays | record's guest output |");
    console.log("|---|---|---|---|---|---|---|");
    for (const r of rows) console.log(r);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
