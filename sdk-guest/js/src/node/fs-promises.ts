// `node:fs/promises` for guests: the promise forms of the SDK's `node:fs`.
import { promises } from "./fs.js";

export const {
  readFile,
  writeFile,
  appendFile,
  access,
  stat,
  lstat,
  mkdir,
  readdir,
  unlink,
  rmdir,
  rm,
  rename,
  copyFile,
} = promises;
export default promises;
