#!/bin/sh
# Installs a plinth release archive, after checking it:
#   sh install.sh --key PUBLIC-KEY ARCHIVE [--prefix DIR]
#
# ARCHIVE is a plinth-<version>-<target>.tar.gz, a local path or an https:// URL (plain http://
# only from this machine). PUBLIC-KEY is the minisign public key the release was signed with
# (`RW…`, or a .pub file). The archive's SHA256SUMS must carry a valid signature by that key and
# every file must match its sum, and nothing may be in it that the sums do not name; otherwise
# nothing is installed. Then plinth and plinth-serve go to DIR/bin (default ~/.plinth/bin), the
# first-party plugins into plinth's plugin store ($PLINTH_HOME, default ~/.plinth), and the
# example to DIR/examples. The signature is checked with minisign if it is installed, else with
# openssl (3.0 or newer); PLINTH_VERIFIER=openssl|minisign picks one.
set -eu

usage() {
    echo "usage: install.sh --key PUBLIC-KEY ARCHIVE [--prefix DIR]" >&2
    exit 2
}
fail() {
    echo "install.sh: $*" >&2
    exit 1
}

key="" archive="" prefix="${HOME:?HOME is not set}/.plinth"
while [ $# -gt 0 ]; do
    case "$1" in
    --key) [ $# -ge 2 ] || usage; key=$2; shift 2 ;;
    --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
    -h | --help) usage ;;
    -*) usage ;;
    *) [ -z "$archive" ] || usage; archive=$1; shift ;;
    esac
done
[ -n "$key" ] && [ -n "$archive" ] || usage
for tool in tar gzip sha256sum base64 od; do
    command -v "$tool" >/dev/null || fail "$tool is needed"
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT INT TERM

# The archive, fetched if it is a URL.
case "$archive" in
https://* | http://127.0.0.1[:/]* | http://localhost[:/]* | http://\[::1\][:/]*)
    if command -v curl >/dev/null; then
        curl --fail --silent --show-error --location --proto '=https,http' -o "$scratch/archive.tar.gz" "$archive" ||
            fail "could not download $archive"
    elif command -v wget >/dev/null; then
        wget -q -O "$scratch/archive.tar.gz" "$archive" || fail "could not download $archive"
    else
        fail "curl or wget is needed to download $archive"
    fi
    file="$scratch/archive.tar.gz"
    ;;
http://*) fail "$archive: plain http:// only from this machine; use https://" ;;
*://*) fail "$archive: only https:// URLs and local files" ;;
*)
    [ -f "$archive" ] || fail "no such file: $archive"
    file=$archive
    ;;
esac

# What the archive holds, before anything is unpacked: one top directory named
# plinth-<version>-<target>, regular files and directories in it, no path climbing out.
tar -tzvf "$file" >"$scratch/listing" 2>/dev/null || fail "$archive is not a gzipped tar archive"
tar -tzf "$file" >"$scratch/names" 2>/dev/null
top=$(head -n 1 "$scratch/names" | cut -d/ -f1)
case "$top" in
plinth-[0-9]*-*) ;;
*) fail "$archive is not a plinth release: its top directory is not plinth-<version>-<target>" ;;
esac
case "$top" in *[!A-Za-z0-9._-]*) fail "$archive: a strange top directory name" ;; esac
while IFS= read -r name; do
    case "$name" in
    "$top" | "$top/" | "$top"/*) ;;
    *) fail "$archive holds a file outside $top/" ;;
    esac
    case "/$name/" in */../* | */./*) fail "$archive holds a path with . or .. in it" ;; esac
done <"$scratch/names"
if cut -c1 "$scratch/listing" | grep -qv '^[-d]$'; then
    fail "$archive holds links or special files; a release holds regular files only"
fi
mkdir "$scratch/x"
tar -xzf "$file" -C "$scratch/x" --no-same-owner --no-same-permissions ||
    fail "unpacking $archive failed"
dir="$scratch/x/$top"
[ -f "$dir/SHA256SUMS" ] && [ -f "$dir/SHA256SUMS.minisig" ] ||
    fail "$archive has no SHA256SUMS and SHA256SUMS.minisig"

# The public key: `RW…` as given, or the last line of a .pub file.
if [ -f "$key" ]; then
    key=$(tail -n 1 "$key")
fi
case "$key" in
RW*) ;;
*) fail "--key takes a minisign public key (RW…) or its .pub file" ;;
esac

# minisign's signature check, done with openssl: Ed25519 over the file (its BLAKE2b-512 for the
# prehashed `ED` signatures minisign makes), then over the signature and its trusted comment.
verify_openssl() { # FILE SIGNATURE
    v="$scratch/v"
    mkdir -p "$v"
    printf '%s' "$key" | base64 -d >"$v/pk" 2>/dev/null || fail "the public key is not base64"
    [ "$(wc -c <"$v/pk")" -eq 42 ] || fail "the public key is not a minisign public key"
    sed -n 2p "$2" | base64 -d >"$v/sig" 2>/dev/null || return 1
    [ "$(wc -c <"$v/sig")" -eq 74 ] || return 1
    sed -n 4p "$2" | base64 -d >"$v/global" 2>/dev/null || return 1
    [ "$(wc -c <"$v/global")" -eq 64 ] || return 1
    comment=$(sed -n 3p "$2")
    case "$comment" in "trusted comment: "*) ;; *) return 1 ;; esac
    # Key ids: bytes 3-10 of both.
    [ "$(tail -c +3 "$v/pk" | head -c 8 | od -An -tx1)" = "$(tail -c +3 "$v/sig" | head -c 8 | od -An -tx1)" ] ||
        fail "SHA256SUMS is signed by another key than the one given"
    # An Ed25519 public key as DER: the SubjectPublicKeyInfo prefix, then its 32 bytes.
    printf '\060\052\060\005\006\003\053\145\160\003\041\000' >"$v/pk.der"
    tail -c 32 "$v/pk" >>"$v/pk.der"
    tail -c 64 "$v/sig" >"$v/sig64"
    case "$(head -c 2 "$v/sig")" in
    ED) openssl dgst -blake2b512 -binary "$1" >"$v/msg" ;;
    Ed) cp "$1" "$v/msg" ;;
    *) return 1 ;;
    esac
    openssl pkeyutl -verify -pubin -keyform DER -inkey "$v/pk.der" -rawin \
        -in "$v/msg" -sigfile "$v/sig64" >/dev/null 2>&1 || return 1
    { cat "$v/sig64"; printf '%s' "${comment#trusted comment: }"; } >"$v/global-msg"
    openssl pkeyutl -verify -pubin -keyform DER -inkey "$v/pk.der" -rawin \
        -in "$v/global-msg" -sigfile "$v/global" >/dev/null 2>&1 || return 1
}

verifier=${PLINTH_VERIFIER:-}
if [ -z "$verifier" ]; then
    if command -v minisign >/dev/null; then verifier=minisign; else verifier=openssl; fi
fi
case "$verifier" in
minisign)
    minisign -Vq -P "$key" -m "$dir/SHA256SUMS" -x "$dir/SHA256SUMS.minisig" >/dev/null 2>&1 ||
        fail "the signature of SHA256SUMS does not verify with the key given: this archive is not the one that key's owner released; nothing was installed"
    ;;
openssl)
    command -v openssl >/dev/null || fail "minisign or openssl is needed to check the signature"
    verify_openssl "$dir/SHA256SUMS" "$dir/SHA256SUMS.minisig" ||
        fail "the signature of SHA256SUMS does not verify with the key given: this archive is not the one that key's owner released; nothing was installed"
    ;;
*) fail "PLINTH_VERIFIER is minisign or openssl" ;;
esac

# Every file matches its sum, and every file has one.
(cd "$dir" && sha256sum --check --strict --quiet SHA256SUMS >/dev/null 2>&1) ||
    fail "a file of $archive does not match SHA256SUMS: the archive was altered or damaged; nothing was installed"
(cd "$dir" && find . -type f ! -name SHA256SUMS ! -name SHA256SUMS.minisig | sed 's|^\./||' | LC_ALL=C sort) >"$scratch/files"
sed 's/^[0-9a-f]*  //' "$dir/SHA256SUMS" | LC_ALL=C sort >"$scratch/summed"
cmp -s "$scratch/files" "$scratch/summed" ||
    fail "$archive holds files SHA256SUMS does not name; nothing was installed"

# Installed: each binary written beside its place, then renamed over it.
mkdir -p "$prefix/bin"
for binary in plinth plinth-serve; do
    [ -f "$dir/bin/$binary" ] || fail "$archive has no bin/$binary"
    cp "$dir/bin/$binary" "$prefix/bin/.$binary.new"
    chmod 755 "$prefix/bin/.$binary.new"
    mv -f "$prefix/bin/.$binary.new" "$prefix/bin/$binary"
done
plinth="$prefix/bin/plinth"
for wasm in "$dir"/plugins/*.wasm; do
    [ -f "$wasm" ] || continue
    # The same build again is a no-op; --force replaces another build of the same version.
    "$plinth" plugin install "$wasm" --force >/dev/null ||
        fail "installing the plugin $(basename "$wasm") into the plugin store failed"
done
if [ -d "$dir/examples" ]; then
    rm -rf "$prefix/examples.new"
    cp -R "$dir/examples" "$prefix/examples.new"
    rm -rf "$prefix/examples"
    mv "$prefix/examples.new" "$prefix/examples"
fi

echo "Installed $("$plinth" --version | head -n 1) into $prefix/bin, and its plugins:"
"$plinth" plugin ls | sed 's/^/  /'
case ":${PATH:-}:" in
*":$prefix/bin:"*) ;;
*)
    case "${SHELL:-}" in
    */zsh) rc="~/.zshrc" ;;
    */fish) rc="~/.config/fish/config.fish" ;;
    *) rc="~/.bashrc" ;;
    esac
    echo
    echo "$prefix/bin is not on your PATH. Add this line to $rc, then open a new shell:"
    case "$rc" in
    *fish*) echo "  fish_add_path $prefix/bin" ;;
    *) echo "  export PATH=\"$prefix/bin:\$PATH\"" ;;
    esac
    ;;
esac
if [ -d "$prefix/examples/hello" ]; then
    echo
    echo "Try it: cp -R $prefix/examples/hello ~/hello && cd ~/hello && plinth stack init dev && plinth up"
fi
