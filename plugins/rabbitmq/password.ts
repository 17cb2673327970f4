// Whether a password is the one a broker keeps the hash of. RabbitMQ stores a user's password
// as base64(salt ++ H(salt ++ password)), with a 4-byte random salt and H the hash function its
// `hashing_algorithm` names (rabbit_password.erl): re-hashing a known password with the stored
// salt tells whether the broker's password is still that one, without the broker ever
// revealing it.

/** WebCrypto's names of the hash functions of RabbitMQ's password hashing modules. */
const ALGORITHMS: Record<string, string> = {
  rabbit_password_hashing_sha256: "SHA-256",
  rabbit_password_hashing_sha512: "SHA-512",
};

const SALT_BYTES = 4;

/**
 * `true` when `password` hashes to the user's `password_hash`, `false` when it does not (the
 * password was changed on the broker, or cleared), `undefined` when it cannot be told: a hashing
 * module without a WebCrypto digest (`rabbit_password_hashing_md5`), or a hash that is not
 * base64 of a salt and a digest.
 */
export async function passwordMatches(
  password: string,
  user: { password_hash?: string; hashing_algorithm?: string },
): Promise<boolean | undefined> {
  const stored = user.password_hash ?? "";
  // No hash: the user has no password at all now (set out of band with `clear_password`).
  if (stored === "") return false;
  const algorithm = ALGORITHMS[user.hashing_algorithm ?? "rabbit_password_hashing_sha256"];
  if (!algorithm) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(atob(stored), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
  const salt = bytes.subarray(0, SALT_BYTES);
  const digest = bytes.subarray(SALT_BYTES);
  const text = new TextEncoder().encode(password);
  const salted = new Uint8Array(SALT_BYTES + text.length);
  salted.set(salt);
  salted.set(text, SALT_BYTES);
  const expected = new Uint8Array(await crypto.subtle.digest(algorithm, salted));
  if (expected.length !== digest.length || digest.length === 0) return undefined;
  return expected.every((byte, i) => byte === digest[i]);
}
