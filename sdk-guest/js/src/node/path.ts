// `node:path` for guests: the POSIX half of Node's module (a guest's file system is the
// granted directories, named by POSIX paths). The working directory is `/`.

export const sep = "/";
export const delimiter = ":";

export function isAbsolute(path: string): boolean {
  return path.startsWith("/");
}

/** `path` without `.`, `..` and repeated separators; `.` for nothing. */
export function normalize(path: string): string {
  const absolute = isAbsolute(path);
  const trailing = path.endsWith("/");
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length > 0 && parts[parts.length - 1] !== "..") parts.pop();
      else if (!absolute) parts.push("..");
    } else {
      parts.push(part);
    }
  }
  const joined = parts.join("/");
  if (absolute) return `/${joined}${trailing && joined ? "/" : ""}`;
  return `${joined || "."}${trailing ? "/" : ""}`;
}

export function join(...paths: string[]): string {
  const joined = paths.filter((p) => p !== "").join("/");
  return joined ? normalize(joined) : ".";
}

/** The absolute path of `paths` taken in turn from the working directory, `/`. */
export function resolve(...paths: string[]): string {
  let resolved = "";
  for (let i = paths.length - 1; i >= 0 && !isAbsolute(resolved); i--) {
    if (paths[i]) resolved = resolved ? `${paths[i]}/${resolved}` : paths[i];
  }
  const normal = normalize(`/${resolved}`);
  return normal.length > 1 && normal.endsWith("/") ? normal.slice(0, -1) : normal;
}

export function relative(from: string, to: string): string {
  const a = resolve(from).split("/").filter(Boolean);
  const b = resolve(to).split("/").filter(Boolean);
  let common = 0;
  while (common < a.length && common < b.length && a[common] === b[common]) common++;
  return [...a.slice(common).map(() => ".."), ...b.slice(common)].join("/");
}

function trimmed(path: string): string {
  let end = path.length;
  while (end > 1 && path[end - 1] === "/") end--;
  return path.slice(0, end);
}

export function dirname(path: string): string {
  const p = trimmed(path);
  const slash = p.lastIndexOf("/");
  if (slash < 0) return ".";
  if (slash === 0) return "/";
  return p.slice(0, slash);
}

export function basename(path: string, suffix?: string): string {
  const p = trimmed(path);
  const base = p === "/" ? "" : p.slice(p.lastIndexOf("/") + 1);
  return suffix && base !== suffix && base.endsWith(suffix) ? base.slice(0, -suffix.length) : base;
}

export function extname(path: string): string {
  const base = basename(path);
  const dot = base.lastIndexOf(".");
  return dot <= 0 || base === ".." ? "" : base.slice(dot);
}

export interface ParsedPath {
  root: string;
  dir: string;
  base: string;
  ext: string;
  name: string;
}

export function parse(path: string): ParsedPath {
  const base = basename(path);
  const ext = extname(path);
  const dir = path.includes("/") ? dirname(path) : "";
  return { root: isAbsolute(path) ? "/" : "", dir, base, ext, name: ext ? base.slice(0, -ext.length) : base };
}

export function format(parts: Partial<ParsedPath>): string {
  const base = parts.base ?? `${parts.name ?? ""}${parts.ext ?? ""}`;
  const dir = parts.dir ?? parts.root ?? "";
  if (!dir) return base;
  return dir.endsWith("/") ? `${dir}${base}` : `${dir}/${base}`;
}

const path = { sep, delimiter, isAbsolute, normalize, join, resolve, relative, dirname, basename, extname, parse, format };
export const posix = path;
export default path;
