/// <reference path="./wasi-filesystem.d.ts" />
// `node:fs` for guests, over `wasi:filesystem`: the directories the plugin is granted, under
// the guest paths its `capabilities.dirs` ask for. The synchronous functions do the work; the
// promise forms (`fs.promises`, `node:fs/promises`) call them. Errors are Node's: an `Error`
// with `code` (`ENOENT`, `EACCES`, ...), `syscall` and `path`.

import { getDirectories } from "wasi:filesystem/preopens@0.2.10";
import type { Descriptor, DescriptorStat, DescriptorType } from "wasi:filesystem/types@0.2.10";
import { resolve } from "./path.js";

/** Node's error codes for `wasi:filesystem`'s, and their messages. */
const CODES: Record<string, [string, string]> = {
  access: ["EACCES", "permission denied"],
  "not-permitted": ["EPERM", "operation not permitted"],
  "read-only": ["EROFS", "read-only file system"],
  "no-entry": ["ENOENT", "no such file or directory"],
  exist: ["EEXIST", "file already exists"],
  "is-directory": ["EISDIR", "illegal operation on a directory"],
  "not-directory": ["ENOTDIR", "not a directory"],
  "not-empty": ["ENOTEMPTY", "directory not empty"],
  invalid: ["EINVAL", "invalid argument"],
  "bad-descriptor": ["EBADF", "bad file descriptor"],
  "insufficient-space": ["ENOSPC", "no space left on device"],
  "insufficient-memory": ["ENOMEM", "not enough memory"],
  loop: ["ELOOP", "too many symbolic links encountered"],
  "name-too-long": ["ENAMETOOLONG", "name too long"],
  busy: ["EBUSY", "resource busy or locked"],
  quota: ["EDQUOT", "disk quota exceeded"],
  "file-too-large": ["EFBIG", "file too large"],
  "cross-device": ["EXDEV", "cross-device link not permitted"],
  unsupported: ["ENOTSUP", "operation not supported"],
  io: ["EIO", "i/o error"],
};

/** What Node throws for a failed file system call. */
export class SystemError extends Error {
  constructor(
    readonly code: string,
    description: string,
    readonly syscall: string,
    readonly path: string,
  ) {
    super(`${code}: ${description}, ${syscall} '${path}'`);
    this.name = "Error";
  }
}

function systemError(e: unknown, syscall: string, path: string): Error {
  if (e instanceof SystemError) return e;
  // componentize-js throws a `result`'s error as an object holding it in `payload`.
  const code = typeof e === "object" && e !== null && "payload" in e ? (e as { payload: unknown }).payload : e;
  const known = typeof code === "string" ? CODES[code] : undefined;
  if (known) return new SystemError(known[0], known[1], syscall, path);
  return e instanceof Error ? e : new SystemError("EIO", `i/o error (${String(code)})`, syscall, path);
}

let preopens: [Descriptor, string][] | undefined;

/** The granted directory holding `path` (the longest match), and `path` inside it. */
function locate(path: string, syscall: string): [Descriptor, string] {
  if (typeof path !== "string") {
    throw new TypeError(`the path must be a string, not ${typeof path}`);
  }
  const absolute = resolve(path);
  preopens ??= getDirectories();
  let best: [Descriptor, string, number] | undefined;
  for (const [dir, guest] of preopens) {
    const root = resolve(guest);
    const inside =
      absolute === root ? "." : absolute.startsWith(root === "/" ? "/" : `${root}/`) ? absolute.slice(root.length).replace(/^\//, "") : undefined;
    if (inside !== undefined && (!best || root.length > best[2])) best = [dir, inside, root.length];
  }
  if (!best && (preopens as { ungrantable?: boolean }).ungrantable) {
    throw new SystemError(
      "EACCES",
      "permission denied: programs and policy packs are granted no directory; only a provider can be (a provider's capabilities.dirs, granted in Plinth.yaml under `plugins: <name>: grants: dirs`)",
      syscall,
      path,
    );
  }
  if (!best) {
    const granted = preopens.map(([, guest]) => guest);
    throw new SystemError(
      "EACCES",
      `permission denied: no directory granted to this guest holds it (${
        granted.length ? `granted: ${granted.join(", ")}` : "it is granted none"
      }); ask for the directory in the provider's capabilities.dirs and grant it in Plinth.yaml under \`plugins: <name>: grants: dirs\``,
      syscall,
      path,
    );
  }
  return [best[0], best[1]];
}

/** Runs `f` on the granted directory holding `path`, with Node's errors. */
function at<T>(path: string, syscall: string, f: (dir: Descriptor, inside: string) => T): T {
  try {
    const [dir, inside] = locate(path, syscall);
    return f(dir, inside);
  } catch (e) {
    throw systemError(e, syscall, path);
  }
}

/** Frees a descriptor now rather than when the engine collects it, where the engine can. */
function close(descriptor: Descriptor) {
  const dispose = (Symbol as { dispose?: symbol }).dispose;
  if (dispose) (descriptor as unknown as Record<symbol, (() => void) | undefined>)[dispose]?.();
}

function withFile<T>(dir: Descriptor, inside: string, flags: Parameters<Descriptor["openAt"]>[2], write: boolean, f: (file: Descriptor) => T): T {
  const file = dir.openAt({ symlinkFollow: true }, inside, flags, { read: !write, write });
  try {
    return f(file);
  } finally {
    close(file);
  }
}

type Encoding = "utf8" | "utf-8";
type ReadOptions = { encoding?: Encoding | null } | Encoding | null;

function encodingOf(options: ReadOptions | undefined): Encoding | null {
  if (typeof options === "string") return options;
  return options?.encoding ?? null;
}

/** The file's bytes, or its text when an encoding is given (only UTF-8 is). */
export function readFileSync(path: string): Uint8Array;
export function readFileSync(path: string, options: Encoding | { encoding: Encoding }): string;
export function readFileSync(path: string, options?: ReadOptions): string | Uint8Array;
export function readFileSync(path: string, options?: ReadOptions): string | Uint8Array {
  const bytes = at(path, "open", (dir, inside) =>
    withFile(dir, inside, {}, false, (file) => {
      const chunks: Uint8Array[] = [];
      let offset = 0n;
      for (;;) {
        const [chunk, end] = file.read(65536n, offset);
        chunks.push(chunk);
        offset += BigInt(chunk.length);
        if (end || chunk.length === 0) break;
      }
      return concat(chunks);
    }),
  );
  return encodingOf(options) ? new TextDecoder().decode(bytes) : bytes;
}

function concat(chunks: Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

type Data = string | Uint8Array;

function bytesOf(data: Data): Uint8Array {
  return typeof data === "string" ? new TextEncoder().encode(data) : data;
}

function writeAll(file: Descriptor, bytes: Uint8Array, start: bigint) {
  let done = 0;
  while (done < bytes.length) {
    done += Number(file.write(bytes.subarray(done), start + BigInt(done)));
  }
}

/** Creates or replaces the file with `data` (text is written as UTF-8). */
export function writeFileSync(path: string, data: Data, _options?: unknown): void {
  at(path, "open", (dir, inside) =>
    withFile(dir, inside, { create: true, truncate: true }, true, (file) => writeAll(file, bytesOf(data), 0n)),
  );
}

/** Adds `data` at the end of the file, creating it if need be. */
export function appendFileSync(path: string, data: Data, _options?: unknown): void {
  at(path, "open", (dir, inside) =>
    withFile(dir, inside, { create: true }, true, (file) => writeAll(file, bytesOf(data), file.stat().size)),
  );
}

export function existsSync(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** What `statSync` says of a file. */
export class Stats {
  readonly size: number;
  readonly mtimeMs: number;
  readonly mtime: Date;
  readonly nlink: number;
  constructor(private readonly stat: DescriptorStat) {
    this.size = Number(stat.size);
    const m = stat.dataModificationTimestamp;
    this.mtimeMs = m ? Number(m.seconds) * 1000 + Math.floor(m.nanoseconds / 1e6) : 0;
    this.mtime = new Date(this.mtimeMs);
    this.nlink = Number(stat.linkCount);
  }
  isFile(): boolean {
    return this.stat.type === "regular-file";
  }
  isDirectory(): boolean {
    return this.stat.type === "directory";
  }
  isSymbolicLink(): boolean {
    return this.stat.type === "symbolic-link";
  }
}

export function statSync(path: string): Stats {
  return at(path, "stat", (dir, inside) => new Stats(inside === "." ? dir.stat() : dir.statAt({ symlinkFollow: true }, inside)));
}

export function lstatSync(path: string): Stats {
  return at(path, "lstat", (dir, inside) => new Stats(inside === "." ? dir.stat() : dir.statAt({}, inside)));
}

/** Creates a directory; with `recursive`, its missing parents too, and an existing one is fine. */
export function mkdirSync(path: string, options?: { recursive?: boolean }): void {
  at(path, "mkdir", (dir, inside) => {
    if (!options?.recursive) return dir.createDirectoryAt(inside);
    // Each missing directory from the granted one down.
    let made = "";
    for (const part of inside === "." ? [] : inside.split("/")) {
      made = made ? `${made}/${part}` : part;
      try {
        dir.createDirectoryAt(made);
      } catch (e) {
        if ((systemError(e, "mkdir", path) as { code?: string }).code !== "EEXIST") throw e;
        if (dir.statAt({ symlinkFollow: true }, made).type !== "directory") throw e;
      }
    }
  });
}

/** A directory entry, as `readdirSync(path, { withFileTypes: true })` returns them. */
export class Dirent {
  constructor(
    readonly name: string,
    private readonly type: DescriptorType,
  ) {}
  isFile(): boolean {
    return this.type === "regular-file";
  }
  isDirectory(): boolean {
    return this.type === "directory";
  }
  isSymbolicLink(): boolean {
    return this.type === "symbolic-link";
  }
}

/** The names in a directory, sorted (or `Dirent`s with `withFileTypes`). */
export function readdirSync(path: string): string[];
export function readdirSync(path: string, options: { withFileTypes: true }): Dirent[];
export function readdirSync(path: string, options?: { withFileTypes?: boolean }): string[] | Dirent[];
export function readdirSync(path: string, options?: { withFileTypes?: boolean }): string[] | Dirent[] {
  const entries = at(path, "scandir", (dir, inside) => {
    const open = inside === "." ? dir : dir.openAt({ symlinkFollow: true }, inside, { directory: true }, { read: true });
    try {
      const stream = open.readDirectory();
      const found: Dirent[] = [];
      for (let entry = stream.readDirectoryEntry(); entry; entry = stream.readDirectoryEntry()) {
        found.push(new Dirent(entry.name, entry.type));
      }
      return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    } finally {
      if (open !== dir) close(open);
    }
  });
  return options?.withFileTypes ? entries : entries.map((e) => e.name);
}

export function unlinkSync(path: string): void {
  at(path, "unlink", (dir, inside) => dir.unlinkFileAt(inside));
}

export function rmdirSync(path: string): void {
  at(path, "rmdir", (dir, inside) => dir.removeDirectoryAt(inside));
}

/** Removes a file, or with `recursive` a directory and what it holds; `force` ignores a missing path. */
export function rmSync(path: string, options?: { recursive?: boolean; force?: boolean }): void {
  let stat: Stats;
  try {
    stat = lstatSync(path);
  } catch (e) {
    if (options?.force && (e as SystemError).code === "ENOENT") return;
    throw e;
  }
  if (!stat.isDirectory()) return unlinkSync(path);
  if (!options?.recursive) {
    throw new SystemError("ERR_FS_EISDIR", "path is a directory (pass `recursive: true`)", "rm", path);
  }
  for (const name of readdirSync(path)) rmSync(`${resolve(path)}/${name}`, options);
  rmdirSync(path);
}

/** Moves a file or directory; both paths must be in granted directories. */
export function renameSync(oldPath: string, newPath: string): void {
  const [to, toInside] = at(newPath, "rename", (dir, inside) => [dir, inside] as const);
  at(oldPath, "rename", (dir, inside) => dir.renameAt(inside, to, toInside));
}

export function copyFileSync(src: string, dest: string): void {
  writeFileSync(dest, readFileSync(src));
}

/** Promise forms of the functions above (what `node:fs/promises` exports). */
export const promises = {
  readFile: async (path: string, options?: ReadOptions) => readFileSync(path, options),
  writeFile: async (path: string, data: Data, options?: unknown) => writeFileSync(path, data, options),
  appendFile: async (path: string, data: Data, options?: unknown) => appendFileSync(path, data, options),
  access: async (path: string) => void statSync(path),
  stat: async (path: string) => statSync(path),
  lstat: async (path: string) => lstatSync(path),
  mkdir: async (path: string, options?: { recursive?: boolean }) => mkdirSync(path, options),
  readdir: async (path: string, options?: { withFileTypes?: boolean }) => readdirSync(path, options),
  unlink: async (path: string) => unlinkSync(path),
  rmdir: async (path: string) => rmdirSync(path),
  rm: async (path: string, options?: { recursive?: boolean; force?: boolean }) => rmSync(path, options),
  rename: async (oldPath: string, newPath: string) => renameSync(oldPath, newPath),
  copyFile: async (src: string, dest: string) => copyFileSync(src, dest),
};

const fs = {
  readFileSync,
  writeFileSync,
  appendFileSync,
  existsSync,
  statSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  unlinkSync,
  rmdirSync,
  rmSync,
  renameSync,
  copyFileSync,
  promises,
  Stats,
  Dirent,
};
export default fs;
