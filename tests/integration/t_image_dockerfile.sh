#!/usr/bin/env bash
# sandcell image build --dockerfile: the common Dockerfile subset built with
# cells, from a small busybox image (made by a recipe of our own, no
# mmdebstrap): RUN layers, ENV/WORKDIR/CMD in the image, COPY from the
# context and not out of it, refusals with FILE:LINE, failures that leave
# no image behind.
. "$(dirname "$0")/../lib.sh"

[ -x /bin/busybox ] || { echo "skip: busybox-static is not installed"; exit 77; }
RC_DIR="$T_DIR/recipes"
CTX="$T_DIR/ctx"
mkdir -p "$RC_DIR" "$T_DIR/tree/bin" "$CTX/sub/deeper"
cp /bin/busybox "$T_DIR/tree/bin/busybox"
for t in sh cat ls pwd echo test mkdir id printf sleep; do ln -s busybox "$T_DIR/tree/bin/$t"; done
export T_EXTRA_ENV="SANDCELL_RECIPES=$RC_DIR"
cat >"$RC_DIR/tiny.sh" <<EOF
echo "env PATH=/bin" >"\$SANDCELL_CONFIG"
tar -C "$T_DIR/tree" -cf "\$SANDCELL_OUT" .
EOF
echo "from the context" >"$CTX/hello.txt"
echo "nested" >"$CTX/sub/deeper/n.txt"
echo "outside" >"$T_DIR/secret.txt"
ln -s "$T_DIR/secret.txt" "$CTX/link.txt"
cat >"$CTX/Dockerfile" <<'EOF'
# a comment, then the image the build starts from
ARG BASE=tiny
FROM ${BASE}
ARG WHO=nobody
ENV GREETING="hello world" \
    OTHER=two
LABEL org.example.k=v
RUN echo "built by $WHO" >/built.txt && \
    mkdir -p /opt/app
WORKDIR /opt/app
RUN ["/bin/sh", "-c", "pwd >where.txt"]
COPY hello.txt .
COPY sub /data/
ADD hello.txt copied-again.txt
USER 1000
CMD ["/bin/sh", "-c", "echo $GREETING"]
EOF
chmod -R a+rX "$T_DIR/recipes" "$T_DIR/tree" "$CTX"
chmod 644 "$T_DIR/secret.txt"

sc image build tiny
check "the small base image builds" expect_rc 0

sc image build app --dockerfile "$CTX/Dockerfile" --build-arg WHO=tests --json
check "a Dockerfile builds" expect_rc 0
check "--json prints the result" bash -c 'printf "%s" "$0" | python3 -c "
import json,sys
r=json.load(sys.stdin)
assert r[\"name\"]==\"app\" and r[\"id\"].startswith(\"sha256-\") and r[\"layers\"]==5, r
assert r[\"source\"].startswith(\"dockerfile:\"), r"' "$OUT"
sc run --image app -- sh -c 'cat /built.txt; pwd; echo "$GREETING/$OTHER"; cat where.txt hello.txt copied-again.txt /data/deeper/n.txt'
check "RUN, ENV, WORKDIR, ARG and COPY are in the image" \
	out_is "$(printf 'built by tests\n/opt/app\nhello world/two\n/opt/app\nfrom the context\nfrom the context\nnested')"
sc run --image app -- ls -lnd /built.txt /opt/app /bin/busybox /tmp
export OUT
check "what RUN and COPY made, and the base's files, are owned by the cell's root" \
	bash -c '[ "$(printf "%s\n" "$OUT" | awk "{print \$3\":\"\$4}" | sort -u)" = 0:0 ] && [ "$(printf "%s\n" "$OUT" | grep -c .)" -eq 4 ]'
sc image ls --json
check "CMD, USER and LABEL are recorded in the image's config" bash -c 'printf "%s" "$0" | python3 -c "
import json,sys
i=[x for x in json.load(sys.stdin) if x[\"name\"]==\"app\"][0]
assert i[\"cmd\"]==[\"/bin/sh\",\"-c\",\"echo \$GREETING\"], i
assert i[\"workdir\"]==\"/opt/app\", i
assert \"GREETING=hello world\" in i[\"env\"], i
assert i[\"user\"]==\"1000\" and i[\"labels\"]==[\"org.example.k=v\"], i"' "$OUT"
check "no intermediate image is left" bash -c '! grep -q dfbuild <<<"$0"' "$OUT"

# FROM scratch: an empty tree, a static busybox copied in, then RUN
cp /bin/busybox "$CTX/busybox"
chmod 755 "$CTX/busybox"
printf '%s\n' 'FROM scratch' 'COPY busybox /bin/busybox' \
	'RUN ["/bin/busybox", "sh", "-c", "/bin/busybox --install -s /bin && echo from-scratch >/s"]' \
	'ENV PATH=/bin' >"$CTX/Dockerfile.scratch"
chmod 644 "$CTX/Dockerfile.scratch"
sc image build scr --dockerfile "$CTX/Dockerfile.scratch"
check "FROM scratch builds" expect_rc 0
sc run --image scr -- sh -c 'cat /s'
check "... an image that runs what was copied into it" out_is "from-scratch"

build_fails() { # NAME DOCKERFILE-TEXT: build NAME from the text (checks follow)
	printf '%s\n' "$2" >"$CTX/Dockerfile.$1"
	chmod 644 "$CTX/Dockerfile.$1"
	sc image build "$1" --dockerfile "$CTX/Dockerfile.$1"
}
no_image() { sc image ls; ! grep -q "^$1 " <<<"$OUT" && ! grep -q dfbuild <<<"$OUT"; }

build_fails up "$(printf 'FROM tiny\nCOPY ../secret.txt /x\n')"
check "a COPY out of the context is refused" bash -c '[ '$RC' -eq 125 ] && grep -q "Dockerfile.up:2: .*outside the build context" <<<"$0"' "$ERR"
check "... and makes no image" no_image up
build_fails lnk "$(printf 'FROM tiny\nCOPY link.txt /x\n')"
check "a COPY of a symlink is refused" bash -c '[ '$RC' -eq 125 ] && grep -q "Dockerfile.lnk:2: .*symlink" <<<"$0"' "$ERR"
build_fails hc "$(printf 'FROM tiny\n# comment\nRUN true \\\n  && true\nHEALTHCHECK CMD true\n')"
check "an unsupported instruction is refused with its line" bash -c '[ '$RC' -eq 125 ] && grep -q "Dockerfile.hc:5: HEALTHCHECK is not supported" <<<"$0"' "$ERR"
check "... in one line" err_one_line
build_fails ms "$(printf 'FROM tiny AS one\nRUN true\n')"
check "a multi-stage FROM is refused" bash -c '[ '$RC' -eq 125 ] && grep -q "Dockerfile.ms:1: FROM ... AS" <<<"$0"' "$ERR"
build_fails cf "$(printf 'FROM tiny\nCOPY --from=one /a /b\n')"
check "COPY --from is refused" bash -c '[ '$RC' -eq 125 ] && grep -q "Dockerfile.cf:2: COPY --from is not supported" <<<"$0"' "$ERR"
build_fails bad "$(printf 'FROM tiny\nRUN echo first >/first\nRUN echo about to fail; exit 3\nRUN echo never\n')"
check "a failing RUN says which and with what status" bash -c '[ '$RC' -eq 125 ] && grep -q "Dockerfile.bad:3: RUN .*status 3" <<<"$0"' "$ERR"
check "... shows the RUN's output" err_has "about to fail"
check "... and leaves no image, no intermediate" no_image bad
sc ps
check "... and no cell" bash -c '! grep -q dfbuild <<<"$0"' "$OUT"
build_fails hst "$(printf 'FROM host\nRUN true\n')"
check "FROM host is refused (the host image is not stored)" bash -c '[ '$RC' -eq 125 ] && grep -q "Dockerfile.hst:1: FROM host is not supported" <<<"$0"' "$ERR"
check "nothing of the build is mounted on the host" bash -c '! grep -q "$0" /proc/self/mountinfo' "$SANDCELL_ROOT"

printf '%s\n' 'FROM tiny' "RUN sleep 4646.$$" >"$CTX/Dockerfile.to"
chmod 644 "$CTX/Dockerfile.to"
sc image build to --dockerfile "$CTX/Dockerfile.to" --timeout 2
check "--timeout bounds a RUN" bash -c '[ '$RC' -eq 125 ] && grep -q "Dockerfile.to:2: RUN .*timed out" <<<"$0"' "$ERR"
check "... and leaves no image" no_image to
for _ in $(seq 600); do no_process_with "sleep 4646.$$" && break; sleep 0.1; done
check "... and the timed-out RUN does not run on" no_process_with "sleep 4646.$$"

# SIGKILL mid-build: the RUN's cell dies with sandcell; the intermediate
# image it left is removed by the next build (once gc has the dead cell).
printf '%s\n' 'FROM tiny' 'RUN echo one >/one' "RUN sleep 4747.$$" >"$CTX/Dockerfile.slow"
chmod 644 "$CTX/Dockerfile.slow"
as_user_exec "$SC_BIN" image build slow --dockerfile "$CTX/Dockerfile.slow" </dev/null >/dev/null 2>&1 &
builder=$!
for _ in $(seq 600); do has_process_with "sleep 4747.$$" && break; sleep 0.1; done
check "the slow RUN was running" has_process_with "sleep 4747.$$"
kill -KILL "$builder"
wait "$builder" 2>/dev/null
for _ in $(seq 600); do no_process_with "sleep 4747.$$" && break; sleep 0.1; done
check "after SIGKILL of the build, its RUN does not run on" no_process_with "sleep 4747.$$"
sc image ls
check "the killed build left its intermediate image" bash -c 'grep -q "^dfbuild-$1-" <<<"$0"' "$OUT" "$builder"
sc gc
build_fails again "$(printf 'FROM tiny\nENV A=1\n')"
check "a later build succeeds" expect_rc 0
sc image ls
check "... and removes the killed build's intermediate image" bash -c '! grep -q "^dfbuild-" <<<"$0"' "$OUT"

# USER applies to the RUN steps after it and is the image's default user
# (a root caller's cells map a range of ids; a rootless cell maps only 0,
# so there the RUN and the cells run as the cell's root, with a warning).
printf '%s\n' 'FROM tiny' 'RUN mkdir -m 777 /work && mkdir -m 755 /rootonly' 'USER 1000' \
	'RUN id -u >/work/uid && id -g >/work/gid && echo made >/work/made' \
	'RUN echo x >/rootonly/f || echo refused >/work/refused' >"$CTX/Dockerfile.user"
chmod 644 "$CTX/Dockerfile.user"
sc image build uimg --dockerfile "$CTX/Dockerfile.user"
check "a Dockerfile with USER builds" expect_rc 0
if [ "$SANDCELL_TEST_AS" = root ]; then
	sc run --image uimg --user 0 -- sh -c 'cat /work/uid /work/gid /work/refused; ls -ln /work/made'
	check "RUN after USER 1000 runs as 1000 (id -u, id -g), cannot write a root-owned dir" \
		bash -c '[ "$(printf "%s\n" "$0" | head -3)" = "$(printf "1000\n1000\nrefused")" ]' "$OUT"
	check "a file a RUN made after USER 1000 is owned by 1000 in the image" \
		bash -c '[ "$(printf "%s\n" "$0" | tail -1 | awk "{print \$3\":\"\$4}")" = 1000:1000 ]' "$OUT"
	sc run --image uimg -- id -u
	check "the image's cells run as its USER" out_is 1000
	sc run --image uimg --user 0 -- id -u
	check "--user 0 runs them as root again" out_is 0
else
	sc run --image uimg -- sh -c 'cat /work/uid; id -u'
	check "rootless: USER 1000 cannot be mapped, RUN and the cell run as the cell's root" \
		bash -c '[ "$0" = "$(printf "0\n0")" ]' "$OUT"
	check "... and say so on stderr" err_has "running as the cell's root"
fi

sc image build x --dockerfile "$CTX/Dockerfile" --help
check "--help is true" bash -c '[ '$RC' -eq 0 ] && grep -q -- "--dockerfile FILE" <<<"$0"' "$OUT"
finish
