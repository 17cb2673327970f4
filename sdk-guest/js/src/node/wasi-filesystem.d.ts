// The part of `wasi:filesystem` the SDK's `node:fs` uses, as componentize-js binds it (the
// version the JS engine itself imports, so that the component has one set of these imports).
declare module "wasi:filesystem/preopens@0.2.10" {
  import type { Descriptor } from "wasi:filesystem/types@0.2.10";
  export function getDirectories(): [Descriptor, string][];
}

declare module "wasi:filesystem/types@0.2.10" {
  export type DescriptorType =
    | "unknown"
    | "block-device"
    | "character-device"
    | "directory"
    | "fifo"
    | "symbolic-link"
    | "regular-file"
    | "socket";
  export interface Datetime {
    seconds: bigint;
    nanoseconds: number;
  }
  export interface DescriptorStat {
    type: DescriptorType;
    linkCount: bigint;
    size: bigint;
    dataAccessTimestamp?: Datetime;
    dataModificationTimestamp?: Datetime;
    statusChangeTimestamp?: Datetime;
  }
  export interface PathFlags {
    symlinkFollow?: boolean;
  }
  export interface OpenFlags {
    create?: boolean;
    directory?: boolean;
    exclusive?: boolean;
    truncate?: boolean;
  }
  export interface DescriptorFlags {
    read?: boolean;
    write?: boolean;
    mutateDirectory?: boolean;
  }
  export interface DirectoryEntry {
    type: DescriptorType;
    name: string;
  }
  export class DirectoryEntryStream {
    readDirectoryEntry(): DirectoryEntry | undefined;
  }
  export class Descriptor {
    openAt(pathFlags: PathFlags, path: string, openFlags: OpenFlags, flags: DescriptorFlags): Descriptor;
    read(length: bigint, offset: bigint): [Uint8Array, boolean];
    write(buffer: Uint8Array, offset: bigint): bigint;
    stat(): DescriptorStat;
    statAt(pathFlags: PathFlags, path: string): DescriptorStat;
    createDirectoryAt(path: string): void;
    readDirectory(): DirectoryEntryStream;
    removeDirectoryAt(path: string): void;
    unlinkFileAt(path: string): void;
    renameAt(oldPath: string, newDescriptor: Descriptor, newPath: string): void;
  }
}
