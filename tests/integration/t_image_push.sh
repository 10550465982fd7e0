#!/usr/bin/env bash
# ctest-timeout: 600
# sandcell image push to a real registry (Debian's docker-registry on
# loopback, registry_lib.sh): plain HTTP, Basic auth, bearer tokens with
# push scope; what skopeo and a pull see afterwards; blobs already there;
# refused credentials named without the secret.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/registry_lib.sh"

# --- the image: the two-layer test image (whiteouts, env, workdir) imported ---
python3 "$TOOL" oci "$R/two"
sc image import "$R/two" two
check "the test image is imported" expect_rc 0

sc image push --help
check "push --help is true and shows the usage" \
	bash -c '[ '$RC' -eq 0 ] && grep -q "usage: sandcell image push NAME REF" <<<"$0"' "$OUT"
sc image --help
check "image --help lists push" out_has "push NAME REF"

REF="127.0.0.1:$P_PLAIN/pushed/two:1"
sc image push two "$REF" --insecure
check "push to a plain-HTTP loopback registry succeeds" expect_rc 0
check "a line per blob: the layer and the config pushed" \
	bash -c '[ "$(grep -cE "^(layer|config) sha256:[0-9a-f]{64}: pushed$" <<<"$0")" -eq 2 ]' "$OUT"
DIGEST=$(sed -n "s|^$REF: digest: \(sha256:[0-9a-f]\{64\}\)$|\1|p" <<<"$OUT")
check "... and the manifest's digest" test -n "$DIGEST"
check "the progress goes to stderr" err_has "uploading"

MAN="$R/pushed-manifest.json"
curl -s -H "Accept: application/vnd.oci.image.manifest.v1+json" -D "$R/pushed-headers" \
	"http://127.0.0.1:$P_PLAIN/v2/pushed/two/manifests/1" >"$MAN"
check "the registry serves an OCI image manifest with gzip layers, under the printed digest" \
	python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))
assert m["mediaType"] == "application/vnd.oci.image.manifest.v1+json", m
assert m["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json", m
assert m["layers"] and all(l["mediaType"].endswith("tar+gzip") for l in m["layers"]), m
h = open(sys.argv[2]).read().lower()
assert "docker-content-digest: " + sys.argv[3] in h, h' "$MAN" "$R/pushed-headers" "$DIGEST"
skopeo inspect --tls-verify=false "docker://$REF" >"$R/inspect.json" 2>"$R/inspect.err"
check "skopeo inspect sees the image: its digest, its layers, its env" \
	python3 -c 'import json,sys
i = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
assert i["Digest"] == sys.argv[3], i
assert i["Layers"] == [l["digest"] for l in m["layers"]], i
assert "IMAGE_VAR=from-image" in i["Env"], i' "$R/inspect.json" "$MAN" "$DIGEST"
check "the config's diff_ids are the uncompressed layers' digests" \
	bash -c 'cfg=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"config\"][\"digest\"])" "$0")
	layer=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"layers\"][0][\"digest\"])" "$0")
	diff=$(curl -s "http://127.0.0.1:'$P_PLAIN'/v2/pushed/two/blobs/$cfg" |
		python3 -c "import json,sys; print(json.load(sys.stdin)[\"rootfs\"][\"diff_ids\"][0])")
	[ "sha256:$(curl -s "http://127.0.0.1:'$P_PLAIN'/v2/pushed/two/blobs/$layer" | gzip -dc | sha256sum | cut -c1-64)" = "$diff" ]' "$MAN"

sc image pull --insecure "$REF" back
check "the pushed image pulls back under a new name" expect_rc 0
FILES='cd / && find bin etc opq -xdev | sort && find bin etc opq -xdev -type f | sort | xargs md5sum'
sc run --image two -- sh -c "$FILES; echo \$IMAGE_VAR; pwd"
before="$OUT"
sc run --image back -- sh -c "$FILES; echo \$IMAGE_VAR; pwd"
check "a cell of the pulled image has the same files, contents and defaults" \
	bash -c '[ -n "$0" ] && [ "$0" = "$1" ] && grep -q "etc/kept" <<<"$0" && grep -q from-image <<<"$0"' "$before" "$OUT"
sc run --image back -- sh -c 'test -e /etc/gone || echo gone'
check "... and the whiteout's file stays gone" out_is gone

puts() { grep -c '"PUT /v2/pushed/two/blobs/uploads/' "$R/plain.log"; }
before=$(puts)
sc image push two "$REF" --insecure --json
check "push again: every blob already present, the same digest (--json)" \
	python3 -c 'import json,sys
r = json.loads(sys.argv[1])
assert r["ref"] == sys.argv[2] and r["digest"] == sys.argv[3], r
assert len(r["layers"]) == 1 and not r["layers"][0]["pushed"] and not r["config"]["pushed"], r
assert r["layers"][0]["size"] > 0 and r["layers"][0]["digest"].startswith("sha256:"), r' "$OUT" "$REF" "$DIGEST"
check "... and no blob was uploaded again" bash -c '[ "$(grep -c "\"PUT /v2/pushed/two/blobs/uploads/" "$0")" -eq "$1" ]' \
	"$R/plain.log" "$before"
sc image push two "$REF" --insecure
check "... said as such, a line per blob" \
	bash -c '[ '$RC' -eq 0 ] && [ "$(grep -c ": already present$" <<<"$0")" -eq 2 ] && ! grep -q ": pushed$" <<<"$0"' "$OUT"

# --- Basic auth ---
BREF="127.0.0.1:$P_BASIC/pushed/basic:1"
creds_json "$CREDS/basic.json" "127.0.0.1:$P_BASIC" "{\"auth\": \"$(printf %s "$USERPASS" | base64 -w0)\"}"
creds_json "$CREDS/basic-wrong.json" "127.0.0.1:$P_BASIC" "{\"auth\": \"$(printf 'alice:nope' | base64 -w0)\"}"
T_EXTRA_ENV="DOCKER_CONFIG=$CREDS/empty" sc image push two "$BREF" --insecure
check "a Basic-auth registry without credentials: asks for a user name and password" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "127.0.0.1:'$P_BASIC' wants a user name and password" <<<"$0"' "$ERR"
sc image push two "$BREF" --insecure --creds-file "$CREDS/basic-wrong.json"
check "wrong credentials: the error names the registry and the file, in one line" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "127.0.0.1:'$P_BASIC'" <<<"$0" && grep -q "basic-wrong.json were refused" <<<"$0" &&
		[ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
ALL="$OUT$ERR"
sc image push two "$BREF" --insecure --creds-file "$CREDS/basic.json"
check "push to a Basic-auth registry with credentials succeeds" expect_rc 0
ALL="$ALL$OUT$ERR"
check "the registry authorized the upload" grep -q 'msg="authorized request".*uri="\?/v2/pushed/basic/blobs/uploads' "$R/basic.log"
check "the pushed tag is there" bash -c 'curl -sf -o /dev/null -H "Accept: application/vnd.oci.image.manifest.v1+json" \
	"http://127.0.0.1:'$P_PLAIN'/v2/pushed/basic/manifests/1"'

# --- bearer tokens: anonymous, and a private repository with credentials ---
sc image push two "127.0.0.1:$P_AUTH/pushed/token:1" --insecure
check "push through bearer-token auth succeeds" expect_rc 0
check "the token asked for is scoped push,pull" \
	grep -q "scope=repository%3Apushed%2Ftoken%3Apush%2Cpull auth=none" "$R/token-requests.log"
T_EXTRA_ENV="DOCKER_CONFIG=$CREDS/empty" sc image push two "127.0.0.1:$P_AUTH/private/pushed:1" --insecure
check "a private repository without credentials is refused, naming the registry" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "127.0.0.1:'$P_AUTH'.*refused access to private/pushed" <<<"$0"' "$ERR"
creds_json "$CREDS/auth.json" "127.0.0.1:$P_AUTH" "{\"auth\": \"$(printf %s "$USERPASS" | base64 -w0)\"}"
sc image push two "127.0.0.1:$P_AUTH/private/pushed:1" --insecure --creds-file "$CREDS/auth.json"
check "with credentials, the token service grants the push" \
	bash -c '[ '$RC' -eq 0 ] && grep -q "scope=repository%3Aprivate%2Fpushed%3Apush%2Cpull auth=basic" "'"$R"'/token-requests.log"'
ALL="$ALL$OUT$ERR"
creds_json "$CREDS/wrong.json" "127.0.0.1:$P_AUTH" "{\"auth\": \"$(printf 'alice:wrong' | base64 -w0)\"}"
sc image push two "127.0.0.1:$P_AUTH/private/pushed:2" --insecure --creds-file "$CREDS/wrong.json"
check "wrong credentials for the token service: refused, naming the registry and the file" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "127.0.0.1:'$P_AUTH'" <<<"$0" && grep -q "wrong.json were refused" <<<"$0"' "$ERR"
ALL="$ALL$OUT$ERR"
check "no secret in any push's output" bash -c '! grep -qF -e "$1" -e "$2" <<<"$0"' \
	"$ALL" "$PASSWORD" "$(printf %s "$USERPASS" | base64 -w0)"

# --- refusals ---
sc image push two "127.0.0.1:$P_PLAIN/pushed/two:1"
check "without --insecure plain HTTP is not used, and the error says how" \
	bash -c '[ '$RC' -ne 0 ] && grep -q -- "--insecure" <<<"$0" && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
sc image push two example.com/pushed/two:1 --insecure
check "--insecure is refused for a registry that is not on loopback" \
	bash -c '[ '$RC' -ne 0 ] && grep -q "loopback" <<<"$0"' "$ERR"
sc image push two "127.0.0.1:$P_PLAIN/pushed/two@$DIGEST" --insecure
check "a digest is not a place to push to" bash -c '[ '$RC' -ne 0 ] && grep -q "not a digest" <<<"$0"' "$ERR"
sc image push nosuch "127.0.0.1:$P_PLAIN/pushed/nosuch:1" --insecure
check "an image that is not stored is an error of one line" \
	bash -c '[ '$RC' -ne 0 ] && [ "$(grep -c . <<<"$0")" -eq 1 ]' "$ERR"
sc image push host "127.0.0.1:$P_PLAIN/pushed/host:1" --insecure
check "the host image is not pushed" bash -c '[ '$RC' -ne 0 ] && grep -q "host image cannot be pushed" <<<"$0"' "$ERR"
sc image push two
check "a missing REF is a usage error" expect_rc 125
check "no push left a work directory behind" bash -c '[ -z "$(ls -A "$0" 2>/dev/null)" ]' "$SANDCELL_ROOT/data/tmp"

finish
