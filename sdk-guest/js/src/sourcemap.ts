// Naming the source file and line of an exception: the component runs a bundle, whose stack
// frames name bundle lines; plinth embeds the bundle's source map as `__plinthSourceMap`, and
// this maps each frame back to the program's own file (`index.ts:12:5`).

interface SourceMap {
  sources: string[];
  names?: string[];
  mappings: string;
}

/** A generated position and the original one it came from (all zero-based). */
type Segment = [genColumn: number, source: number, line: number, column: number];

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Decodes one line's base64 VLQ fields into numbers. */
function vlqFields(text: string): number[] {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (const ch of text) {
    const digit = BASE64.indexOf(ch);
    if (digit < 0) throw new Error(`bad source map digit ${ch}`);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    out.push(value & 1 ? -(value >>> 1) : value >>> 1);
    value = 0;
    shift = 0;
  }
  return out;
}

/** The mappings, per generated line. Source, line and column are deltas across lines too. */
export function decodeMappings(mappings: string): Segment[][] {
  const lines: Segment[][] = [];
  let source = 0;
  let line = 0;
  let column = 0;
  for (const text of mappings.split(";")) {
    const segments: Segment[] = [];
    let genColumn = 0;
    for (const field of text.split(",")) {
      if (!field) continue;
      const f = vlqFields(field);
      genColumn += f[0];
      if (f.length >= 4) {
        source += f[1];
        line += f[2];
        column += f[3];
        segments.push([genColumn, source, line, column]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

/** The original position of a one-based generated line and column, if the map has it. */
export function lookup(
  map: SourceMap,
  lines: Segment[][],
  line: number,
  column: number,
): { source: string; line: number; column: number } | undefined {
  const segments = lines[line - 1];
  if (!segments || segments.length === 0) return undefined;
  let best: Segment | undefined;
  for (const segment of segments) {
    if (segment[0] <= column - 1) best = segment;
    else break;
  }
  best ??= segments[0];
  return { source: map.sources[best[1]], line: best[2] + 1, column: best[3] + 1 };
}

let decoded: { map: SourceMap; lines: Segment[][] } | null | undefined;

function embeddedMap(): { map: SourceMap; lines: Segment[][] } | null {
  if (decoded === undefined) {
    const map = (globalThis as { __plinthSourceMap?: SourceMap }).__plinthSourceMap;
    try {
      decoded = map ? { map, lines: decodeMappings(map.mappings) } : null;
    } catch {
      decoded = null;
    }
  }
  return decoded;
}

/**
 * The frames of a stack trace (`fn@file:line:column`, one a line) as `fn (source:line:column)`,
 * mapped through `map`; the SDK's own frames are left out when others remain.
 */
export function mapStack(stack: string, map = embeddedMap()): string[] {
  const frames: { text: string; ours: boolean }[] = [];
  for (const raw of stack.split("\n")) {
    const frame = raw.trim();
    if (!frame) continue;
    const m = /^(.*?)@(.*):(\d+):(\d+)$/.exec(frame);
    if (!m) {
      frames.push({ text: frame, ours: false });
      continue;
    }
    const name = m[1] || "<anonymous>";
    // On the prebuilt runtime, the bundle is evaluated (`runtime.js line 12 > eval`): the
    // runtime's own frames are nothing of the guest's, and the map is not theirs.
    const evaluated = (globalThis as { __plinthEvaluated?: boolean }).__plinthEvaluated === true;
    if (evaluated && !/ > eval$/.test(m[2])) continue;
    const at = map ? lookup(map.map, map.lines, Number(m[3]), Number(m[4])) : undefined;
    if (at) {
      frames.push({
        text: `${name} (${at.source}:${at.line}:${at.column})`,
        ours: at.source.startsWith("@plinth/sdk/"),
      });
    } else if (!evaluated && !/(^|\/)initializer\.js$/.test(m[2])) {
      // (`initializer.js`, in the build's scratch directory, is componentize-js's own
      // wrapper, and an evaluated bundle's unmapped lines are esbuild's: nothing of the
      // guest's.)
      frames.push({ text: `${name} (${m[2]}:${m[3]}:${m[4]})`, ours: false });
    }
  }
  const theirs = frames.filter((f) => !f.ours);
  return (theirs.length ? theirs : frames).map((f) => f.text);
}
