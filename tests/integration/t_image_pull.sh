#!/usr/bin/env bash
# ctest-timeout: 1200
# sandcell image pull against a real registry (Debian's docker-registry,
# the distribution v2 server) on loopback: plain, behind bearer-token auth
# (anonymous and with credentials), behind Basic auth; zstd layers; by tag
# and by digest; whiteouts; resumed and corrupt downloads; rate limits.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/image_cache.sh"

for tool in zstd; do
	command -v "$tool" >/dev/null || { echo "skip: $tool is not installed (scripts/setup.sh)"; exit 77; }
done
. "$(dirname "$0")/registry_lib.sh"
DATA="$SANDCELL_ROOT/data"

push() { # OCI_DIR REPO:TAG
	skopeo --insecure-policy copy -q --dest-tls-verify=false "oci:$1:latest" \
		"docker://127.0.0.1:$P_PLAIN/$2" >"$R/push.log" 2>&1
}

# --- a two-layer image with whiteouts ---
python3 "$TOOL" oci "$R/two"
check "skopeo pushes the test image to the registry" push "$R/two" test/two:1

sc image pull --insecure "127.0.0.1:$P_PLAIN/test/two:1" two
check "pull from a plain-HTTP loopback registry succeeds" expect_rc 0
check "pull reports the layers it downloads" err_has "downloading"
check "... in plain lines, not a terminal's bar, when stderr is a file" \
	bash -c '! grep -q $'"'"'\e'"'"' <<<"$0" && ! grep -q "MB/s" <<<"$0"' "$ERR"
sc run --image two -- sh -c 'cat /etc/kept /etc/added; test -e /etc/gone || echo gone-by-whiteout; ls /opq'
check "the pulled image runs, with the whiteout applied" out_is "$(printf 'kept\nadded\ngone-by-whiteout\nnew')"
sc run --image two -- sh -c 'echo $IMAGE_VAR; pwd'
check "the pulled image's config gives the defaults" out_is "$(printf 'from-image\n/work')"
sc image ls --json
check "image ls shows where the image came from, with the manifest digest" \
	bash -c 'grep -q "pull:127.0.0.1:'$P_PLAIN'/test/two:1@sha256:" <<<"$0"' "$OUT"
check "downloaded blobs are removed once the image is made" bash -c '[ -z "$(ls -A '"$DATA"'/blobs)" ]'

# --- a reference where an image name is expected: pulled when missing ---
REF="127.0.0.1:$P_PLAIN/test/two:1"
sc run --image "$REF" -- true
check "run --image REF from a plain-HTTP registry without --pull-insecure says to use it" \
	bash -c '[ '$RC' -eq 125 ] && grep -q -- "--pull-insecure" <<<"$0"' "$ERR"
sc run --image "$REF" --pull never -- true
check "--pull never: a missing reference is an error naming the flag and the pull command" \
	bash -c '[ '$RC' -eq 125 ] && grep -q "not in the store and --pull never" <<<"$0" &&
		grep -q "sandcell image pull $1" <<<"$0"' "$ERR" "$REF"
sc run --image "$REF" --pull-insecure -- cat /etc/kept
check "run --image REF pulls the missing reference and runs it" out_is kept
check "it says what it pulls, and under which store name" err_has "pulling $REF as image '127.0.0.1_${P_PLAIN}_two_1-"
STORE=$(sed -n "s/.*pulling .* as image '\([^']*\)'.*/\1/p" <<<"$ERR" | head -n 1)
gets() { grep -c "GET /v2/test/two/manifests/1" "$R/plain.log"; }
before=$(gets)
sc run --image "$REF" -- cat /etc/kept
check "run again: the stored image is used, without the registry or --pull-insecure" \
	bash -c '[ '$RC' -eq 0 ] && [ "$0" = kept ] && ! grep -q pulling <<<"$1" && [ "$(grep -c "GET /v2/test/two/manifests/1" "$2")" -eq "$3" ]' \
	"$OUT" "$ERR" "$R/plain.log" "$before"
sc run --image "$REF" --pull always --pull-insecure -- cat /etc/added
check "--pull always pulls again" bash -c '[ '$RC' -eq 0 ] && [ "$0" = added ] && grep -q pulling <<<"$1"' "$OUT" "$ERR"
sc create --image "$REF" "pc$$"
sc exec "pc$$" -- cat /etc/kept
check "create --image REF uses the stored reference too" out_is kept
sc rm -f "pc$$"
sc run --image "127.0.0.1:$P_PLAIN/test/absent:1" --pull-insecure -- true
check "a reference the registry does not have: an error saying so" \
	bash -c '[ '$RC' -eq 125 ] && grep -q "pulling image .* failed: .*not found" <<<"$0"' "$ERR"
sc run --image nosuch -- true
check "a missing one-word name hints at a tag" err_has "nosuch:latest"
sc image rm "$STORE"
check "the reference's image is removed by its store name" expect_rc 0

# --- 40 layers, one blob twice: downloaded at once, applied in order ---
python3 "$TOOL" oci-many "$R/many" 40
check "skopeo pushes a 40-layer image" push "$R/many" test/many:1
# on a terminal (script(1) gives it one): bars drawn in place
as_user script -qec "$SC_BIN image pull --insecure 127.0.0.1:$P_PLAIN/test/many:1 many" /dev/null \
	</dev/null >"$T_DIR/tty.out" 2>&1
RC=$? OUT=$(cat -v "$T_DIR/tty.out") ERR=
check "pull of a 40-layer image with a repeated layer succeeds" expect_rc 0
check "on a terminal, a bar per layer being downloaded (digest, percent, MB)" \
	grep -Eq '  [0-9a-f]{12} \[[#.]{24}\] +[0-9]+%  [0-9.]+/[0-9.]+ MB' "$T_DIR/tty.out"
check "... and one for the image, ending at every layer, 100 %, a rate and done" \
	grep -Eq '  39/39 layers  \[#{24}\] 100%  [0-9.]+/[0-9.]+ MB  [0-9.]+ MB/s  done' "$T_DIR/tty.out"
check "... drawn again in place (the cursor goes back up), not one line a layer" \
	bash -c 'grep -q "\^\[\[[0-9]*A" <<<"$0" && ! grep -q downloading <<<"$0"' "$OUT"
check "each layer's blob was fetched once (the repeated one too)" \
	bash -c 'm=$(curl -s -H "Accept: application/vnd.oci.image.manifest.v1+json" \
		"http://127.0.0.1:'$P_PLAIN'/v2/test/many/manifests/1" |
		python3 -c "import json,sys; print(\" \".join(sorted(set(l[\"digest\"] for l in json.load(sys.stdin)[\"layers\"]))))")
	[ "$(wc -w <<<"$m")" -eq 39 ] || exit 1
	for d in $m; do [ "$(grep -c "GET /v2/test/many/blobs/$d " "'"$R"'/plain.log")" -eq 1 ] || exit 1; done'
sc run --image many -- sh -c 'ls /layers | wc -l; cat /layers/last'
check "the layers were applied in their order (37 files, the last layer's wins)" \
	out_is "$(printf '38\n37')"
sc image rm many
# the same reference pulled by three processes at once: each gets it whole
CC=()
for i in 1 2 3; do
	as_user "$SC_BIN" image pull --insecure "127.0.0.1:$P_PLAIN/test/many:1" many >"$T_DIR/cc.$i" 2>&1 &
	CC+=($!)
done
cc_ok=1
for p in "${CC[@]}"; do wait "$p" || cc_ok=0; done
check "three pulls of one reference into one name at once all succeed" [ "$cc_ok" = 1 ]
[ "$cc_ok" = 1 ] || cat "$T_DIR"/cc.*
sc run --image many -- sh -c 'ls /layers | wc -l; cat /layers/last'
check "... and the image they stored is whole" out_is "$(printf '38\n37')"
sc image ls --json
check "... and stored once" bash -c '[ "$(grep -o "\"name\":\"many\"" <<<"$0" | wc -l)" = 1 ]' "$OUT"
sc image rm many

# --- zstd layers (as registries serve them more and more) ---
python3 "$TOOL" oci-zstd "$R/two-zstd"
check "skopeo pushes the zstd image to the registry" push "$R/two-zstd" test/two-zstd:1
check "the registry serves the layers as zstd" bash -c 'curl -s -H "Accept: application/vnd.oci.image.manifest.v1+json" \
	"http://127.0.0.1:'$P_PLAIN'/v2/test/two-zstd/manifests/1" | grep -q "tar+zstd"'
sc image pull --insecure "127.0.0.1:$P_PLAIN/test/two-zstd:1" two-zstd
check "pull of an image with zstd layers succeeds" expect_rc 0
sc run --image two-zstd -- sh -c 'cat /etc/kept /etc/added; test -e /etc/gone || echo gone-by-whiteout; ls /opq'
check "the zstd image runs, with the whiteout applied" out_is "$(printf 'kept\nadded\ngone-by-whiteout\nnew')"
sc image rm two-zstd

# --- bearer tokens ---
sc image pull --insecure "127.0.0.1:$P_AUTH/test/two:1" two-auth
check "pull through bearer-token auth succeeds" expect_rc 0
check "the token service was asked for a pull token for the repository" \
	grep -q "scope=repository%3Atest%2Ftwo%3Apull" "$R/token-requests.log"
check "the registry accepted the token" grep -q 'uri="/v2/test/two/blobs/sha256' "$R/auth.log"
sc run --image two-auth -- cat /etc/added
check "the image pulled with a token runs" out_is added

# --- credentials: a private repository behind the token service ---
check "skopeo pushes the image to a private repository" push "$R/two" private/two:1
T_EXTRA_ENV="DOCKER_CONFIG=$CREDS/empty" sc image pull --insecure "127.0.0.1:$P_AUTH/private/two:1" p0
check "a private repository without credentials is refused, saying how to log in" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "refused access to private/two" <<<"$0" && grep -q "docker login" <<<"$0"' "$ERR"
creds_json "$CREDS/auth.json" "127.0.0.1:$P_AUTH" "{\"auth\": \"$(printf %s "$USERPASS" | base64 -w0)\"}"
sc image pull --insecure --creds-file "$CREDS/auth.json" "127.0.0.1:$P_AUTH/private/two:1" p1
check "--creds-file: the token service takes the user and password (auth field)" \
	bash -c '[ '$RC' -eq 0 ] && grep -q "scope=repository%3Aprivate%2Ftwo%3Apull auth=basic" "'"$R"'/token-requests.log"'
creds_json "$CREDS/pair/config.json" "127.0.0.1:$P_AUTH" "{\"username\": \"alice\", \"password\": \"$PASSWORD\"}"
T_EXTRA_ENV="DOCKER_CONFIG=$CREDS/pair" sc image pull --insecure "127.0.0.1:$P_AUTH/private/two:1" p2
check "\$DOCKER_CONFIG/config.json is read (username and password fields)" expect_rc 0
creds_json "$CREDS/idt.json" "127.0.0.1:$P_AUTH" "{\"identitytoken\": \"$REFRESH\"}"
T_EXTRA_ENV="REGISTRY_AUTH_FILE=$CREDS/idt.json DOCKER_CONFIG=$CREDS/empty" \
	sc image pull --insecure "127.0.0.1:$P_AUTH/private/two:1" p3
check "an identity token is exchanged with the OAuth2 refresh-token POST" \
	bash -c '[ '$RC' -eq 0 ] && grep -q "^POST /token auth=refresh" "'"$R"'/token-requests.log"'
sc run --image p3 -- cat /etc/added
check "the image pulled with credentials runs" out_is added
creds_json "$CREDS/wrong.json" "127.0.0.1:$P_AUTH" "{\"auth\": \"$(printf 'alice:wrong' | base64 -w0)\"}"
sc image pull --insecure --creds-file "$CREDS/wrong.json" "127.0.0.1:$P_AUTH/private/two:1" p4
check "wrong credentials: the error names the registry and the file, not the secret" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "127.0.0.1:'$P_AUTH'" <<<"$0" && grep -q "wrong.json were refused" <<<"$0"' "$ERR"
ALL_ERR="$ERR"

# --- credentials: Basic auth (a registry with an htpasswd file) ---
T_EXTRA_ENV="DOCKER_CONFIG=$CREDS/empty" sc image pull --insecure "127.0.0.1:$P_BASIC/test/two:1" b0
check "a Basic-auth registry without credentials: asks for a user name and password" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "wants a user name and password" <<<"$0"' "$ERR"
creds_json "$CREDS/basic.json" "127.0.0.1:$P_BASIC" "{\"auth\": \"$(printf %s "$USERPASS" | base64 -w0)\"}"
sc image pull --insecure --creds-file "$CREDS/basic.json" "127.0.0.1:$P_BASIC/test/two:1" b1
check "pull from a Basic-auth registry with credentials succeeds" expect_rc 0
ALL_ERR="$ALL_ERR$ERR"
check "the registry authorized the blob requests (Basic on every request)" \
	grep -q 'msg="authorized request".*uri="\?/v2/test/two/blobs/sha256' "$R/basic.log"
creds_json "$CREDS/basic-wrong.json" "127.0.0.1:$P_BASIC" "{\"auth\": \"$(printf 'alice:nope' | base64 -w0)\"}"
sc image pull --insecure --creds-file "$CREDS/basic-wrong.json" "127.0.0.1:$P_BASIC/test/two:1" b2
check "a Basic-auth registry that refuses the credentials says so, naming the file" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "basic-wrong.json were refused" <<<"$0"' "$ERR"
printf '{"auths": {"127.0.0.1:%s": {"auth": "not base64!"}}}' "$P_BASIC" >"$CREDS/bad.json" && chmod 644 "$CREDS/bad.json"
sc image pull --insecure --creds-file "$CREDS/bad.json" "127.0.0.1:$P_BASIC/test/two:1" b3
check "a malformed credentials entry is an error of one line" \
	bash -c '[ '$RC' -ne 0 ] && [ "$(grep -c . <<<"$0")" -eq 1 ] && grep -q malformed <<<"$0"' "$ERR"
sc image ls --json
check "no secret in the pulls' output or in the store" bash -c '
	! grep -qF -e "$1" -e "$2" -e "$3" <<<"$0" && ! grep -rqF -e "$1" -e "$2" -e "$3" "'"$DATA"'"' \
	"$ALL_ERR$OUT" "$PASSWORD" "$REFRESH" "$(printf %s "$USERPASS" | base64 -w0)"
sc image rm p1 p2 p3 b1

# --- a rate-limited registry (Docker Hub's 429) ---
sc image pull --insecure "127.0.0.1:$P_RATE/test/two:1" r0
check "a 429 is reported as a rate limit, with the retry time and the registry's message" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "rate limited by the registry (HTTP 429, retry after 17 s)" <<<"$0" &&
		grep -q "pull rate limit" <<<"$0"' "$ERR"
check "the registry's message reaches the terminal without its escape sequence" \
	bash -c '! grep -q "$1" <<<"$0"' "$ERR" $'\x1b'


# --- by digest ---
digest=$(curl -s -I -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
	"http://127.0.0.1:$P_PLAIN/v2/test/two/manifests/1" | tr -d '\r' |
	awk -F': ' 'tolower($1)=="docker-content-digest"{print $2}')
sc image pull --insecure "127.0.0.1:$P_PLAIN/test/two@$digest" two-digest
check "pull by digest succeeds" expect_rc 0
sc image pull --insecure "127.0.0.1:$P_PLAIN/test/two@sha256:$(printf '0%.0s' $(seq 64))" nope
check "an unknown digest is an error of one line" bash -c '[ '$RC' -ne 0 ] && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
sc image pull --insecure "127.0.0.1:$P_PLAIN/test/nosuch:1" nope
check "an unknown repository is a 'not found' error" bash -c '[ '$RC' -ne 0 ] && grep -q "not found" <<<"$0"' "$ERR"

# --- refusals before any network traffic ---
sc image pull --insecure example.com/test/two:1 nope
check "--insecure is refused for a registry that is not on loopback" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "loopback" <<<"$0"' "$ERR"
sc image pull "127.0.0.1:$P_PLAIN/test/two:1" nope
check "without --insecure plain HTTP is not used" bash -c '[ '$RC' -ne 0 ] && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
sc image pull --insecure "127.0.0.1:$P_PLAIN/Test/UPPER:1" nope
check "a malformed reference is refused" expect_rc 125
check "no failed pull left an image" bash -c '! grep -q nope <<<"$0"' "$(as_user "$SC_BIN" image ls)"

# --- resumed and corrupt downloads ---
layer=$(curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
	"http://127.0.0.1:$P_PLAIN/v2/test/two/manifests/1" |
	python3 -c 'import json,sys; m=json.load(sys.stdin); print(max(m["layers"], key=lambda l: l["size"])["digest"])')
blob="$R/two/blobs/sha256/${layer#sha256:}"
size=$(stat -c %s "$blob")
sc image rm two two-auth two-digest
check "the pulled images are removed" bash -c '[ '$RC' -eq 0 ] && [ -z "$(ls -A '"$DATA"'/layers)" ]'
partial="$DATA/blobs/sha256-${layer#sha256:}.partial"
head -c $((size / 2)) "$blob" >"$partial"
chown "$T_UID:$T_UID" "$partial"
sc image pull --insecure "127.0.0.1:$P_PLAIN/test/two:1" two
check "an interrupted download is resumed" bash -c '[ '$RC' -eq 0 ] && grep -q resuming <<<"$0"' "$ERR"
check "the resumed download asked the registry for the rest only" \
	bash -c 'grep -q "GET /v2/test/two/blobs/'"$layer"'.* 206 " "'"$R"'/plain.log"'
sc run --image two -- cat /etc/kept
check "the image from a resumed download runs" out_is kept
sc image rm two
head -c $((size / 2)) /dev/urandom >"$partial"
chown "$T_UID:$T_UID" "$partial"
sc image pull --insecure "127.0.0.1:$P_PLAIN/test/two:1" two
check "a corrupt partial download is detected by its digest" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "digest" <<<"$0"' "$ERR"
check "and is thrown away" bash -c '[ ! -e "'"$partial"'" ]'
sc image pull --insecure "127.0.0.1:$P_PLAIN/test/two:1" two
check "the next pull succeeds" expect_rc 0

# --- a Debian image with python3 (the minimal image, from the test cache) ---
if tar=$(img_minimal_tar); then
	python3 "$TOOL" oci-from-tar "$tar" "$R/minimal" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8
	check "skopeo pushes the minimal image" push "$R/minimal" test/minimal:bookworm
	sc image pull --insecure "127.0.0.1:$P_AUTH/test/minimal:bookworm" minimal
	check "pull of the minimal image succeeds" expect_rc 0
	sc run --image minimal -- python3 -c 'import sys; print(sum(range(10)), sys.version_info[0])'
	check "python3 runs in the pulled image" out_is "45 3"
else
	fail "the minimal image could not be built for the test cache"
fi

finish
