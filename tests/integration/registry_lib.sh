# Sourced by the registry tests (after ../lib.sh): Debian's docker-registry
# (the distribution v2 server) on loopback, sharing one storage, as
#   P_PLAIN  open (plain HTTP)
#   P_AUTH   bearer tokens from the token service at P_TOKEN
#            (image_tool.py: any scope, but private/ needs credentials)
#   P_BASIC  Basic auth (htpasswd: alice / $PASSWORD)
#   P_RATE   a stand-in that answers 429 (Docker Hub's rate limit)
# with R (its files), TOOL (image_tool.py), CREDS (a 755 directory for
# credentials files), creds_json FILE HOST:PORT ENTRY-JSON, and the secrets
# the tests log in with (PASSWORD, USERPASS, REFRESH), which must never show
# up in output. Skips the test (77) when a tool is missing; the servers are
# stopped when the test exits.
for tool in docker-registry skopeo openssl curl htpasswd; do
	command -v "$tool" >/dev/null || { echo "skip: $tool is not installed (scripts/setup.sh)"; exit 77; }
done
[ -x /bin/busybox ] || { echo "skip: busybox-static is not installed"; exit 77; }
TOOL="$SRCDIR/tests/integration/image_tool.py"
R="$T_DIR/registry"
mkdir -p "$R"

# Credentials the tests log in with; they must never show up in output.
PASSWORD="pw-$RANDOM$RANDOM-secret"
USERPASS="alice:$PASSWORD"
REFRESH="idt-$RANDOM$RANDOM-refresh"
htpasswd -Bbn alice "$PASSWORD" >"$R/htpasswd"
# docker config.json files (readable by the test user, as its own would be)
CREDS="$T_DIR/creds"
mkdir -p "$CREDS/empty" "$CREDS/pair" && chmod -R 755 "$CREDS"
creds_json() { # FILE HOST:PORT ENTRY-JSON
	printf '{"auths": {"http://%s": %s}, "credsStore": "desktop"}\n' "$2" "$3" >"$1"
	chmod 644 "$1"
}

# One storage, two registries: one open (pushes go there), one that wants
# bearer tokens from a token service that signs them (RS256, x5c).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$R/token.key" -out "$R/token.crt" -days 2 \
	-subj /CN=sandcell-test-tokens >/dev/null 2>&1
PIDS=()
stop_servers() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	t_cleanup
}
trap stop_servers EXIT
# The ports are picked by binding and closing, so another process may take
# one before a server binds it: then start them all again on new ones.
start_servers() {
P_PLAIN=$(free_port)
P_AUTH=$(free_port)
P_TOKEN=$(free_port)
P_BASIC=$(free_port)
P_RATE=$(free_port)

cat >"$R/plain.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $R/storage
http:
  addr: 127.0.0.1:$P_PLAIN
EOF
cat >"$R/auth.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $R/storage
http:
  addr: 127.0.0.1:$P_AUTH
auth:
  token:
    realm: http://127.0.0.1:$P_TOKEN/token
    service: sandcell-test-registry
    issuer: sandcell-test-issuer
    rootcertbundle: $R/token.crt
EOF
cat >"$R/basic.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $R/storage
http:
  addr: 127.0.0.1:$P_BASIC
auth:
  htpasswd:
    realm: sandcell-test-basic
    path: $R/htpasswd
EOF
docker-registry serve "$R/basic.yml" >"$R/basic.log" 2>&1 &
PIDS+=($!)
python3 "$TOOL" ratelimit-server "$P_RATE" >"$R/rate.log" 2>&1 &
PIDS+=($!)
docker-registry serve "$R/plain.yml" >"$R/plain.log" 2>&1 &
PIDS+=($!)
docker-registry serve "$R/auth.yml" >"$R/auth.log" 2>&1 &
PIDS+=($!)
python3 "$TOOL" token-server "$P_TOKEN" "$R/token.key" "$R/token.crt" sandcell-test-registry \
	sandcell-test-issuer "$R/token-requests.log" "$USERPASS" "$REFRESH" >"$R/token.log" 2>&1 &
PIDS+=($!)
for port in "$P_PLAIN" "$P_AUTH" "$P_TOKEN" "$P_BASIC" "$P_RATE"; do
	for _ in $(seq 600); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" && break
		sleep 0.1
	done
done
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || return 1; done
for port in "$P_PLAIN" "$P_AUTH" "$P_TOKEN" "$P_BASIC" "$P_RATE"; do curl -s -o /dev/null "http://127.0.0.1:$port/" || return 1; done
}
servers_up=0
for _ in 1 2 3; do
	if start_servers; then servers_up=1; break; fi
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	PIDS=()
done
[ "$servers_up" -eq 1 ] || { echo "FAIL - the test registries did not start: $(tail -3 "$R"/*.log)"; exit 1; }

