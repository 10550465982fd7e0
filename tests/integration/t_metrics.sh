#!/usr/bin/env bash
# sandcell serve's metrics and trace context, with a real scraper: a
# server on 127.0.0.1 with --metrics-listen, a few requests (/run_code,
# an exec past its timeout, one without the token, unknown paths, W3C
# traceparent headers valid and not), a strict check of the exposition
# text, then Debian's Prometheus (its own process, a temporary config and
# TSDB, loopback) scraping the metrics listener every second, asked
# through its HTTP API for what a user would look at.
# ctest-timeout: 300
. "$(dirname "$0")/../lib.sh"

PROM=$(command -v prometheus || true)
if [ -z "$PROM" ]; then
	echo "SKIP: no prometheus (apt-get install prometheus: scripts/setup.sh)"
	exit 77
fi
CLIENT="$T_DIR/metrics_check.py"
cp "$(dirname "$0")/metrics_check.py" "$CLIENT"
chmod 644 "$CLIENT"
TOKEN=tok-$RANDOM-$RANDOM-$RANDOM
printf '%s\n' "$TOKEN" >"$T_WORK/token"
chmod 644 "$T_WORK/token"

# --- refused at start ---
sc serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" --metrics-listen 0.0.0.0:0
check "a non-loopback --metrics-listen without --metrics-public is refused (125)" expect_rc 125
check "... in one line naming --metrics-public" err_has "metrics-public"
sc serve --help
check "serve --help lists --metrics-listen" out_has "--metrics-listen ADDR"

# --- the server ---
as_user_exec "$SC_BIN" serve --listen 127.0.0.1:0 --token-file "$T_WORK/token" \
	--port-file "$T_WORK/port" --metrics-listen 127.0.0.1:0 --pool 2 --max-concurrency 2 \
	>"$T_WORK/serve.log" 2>"$T_WORK/serve.err" &
SERVER=$!
PROMPID=
stop_all() {
	[ -n "$PROMPID" ] && kill -TERM "$PROMPID" 2>/dev/null && wait "$PROMPID" 2>/dev/null
	kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	t_cleanup
}
trap stop_all EXIT
check "the server writes its port" wait_until test -s "$T_WORK/port"
check "it says where the metrics are" wait_until grep -q "metrics on 127.0.0.1:" "$T_WORK/serve.err"
URL=http://127.0.0.1:$(cat "$T_WORK/port")
MADDR=$(sed -n 's|.*metrics on \(127.0.0.1:[0-9]*\)/metrics.*|\1|p' "$T_WORK/serve.err")

check "requests, limits and trace context" python3 "$CLIENT" drive "$URL" "$TOKEN"
check "the strict exposition check" python3 "$CLIENT" parse "http://$MADDR/metrics"

# --- Prometheus, scraping the metrics listener ---
PPORT=$(free_port)
mkdir -p "$T_DIR/prom/data"
cat >"$T_DIR/prom/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: sandcell
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: ["$MADDR"]
YML
"$PROM" --config.file="$T_DIR/prom/prometheus.yml" --storage.tsdb.path="$T_DIR/prom/data" \
	--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$T_DIR/prom/log" 2>&1 &
PROMPID=$!
prom_ready() { python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
	"http://127.0.0.1:$PPORT/-/ready" >/dev/null 2>&1; }
WAIT_S=30 check "prometheus starts" wait_until prom_ready
check "what Prometheus sees" python3 "$CLIENT" prom "http://127.0.0.1:$PPORT" 30 ||
	tail -5 "$T_DIR/prom/log"
cp "$(dirname "$0")/../../docs/grafana-serve.json" "$T_DIR/dash.json"
check "the Grafana dashboard's queries parse in Prometheus" \
	python3 "$CLIENT" dash "http://127.0.0.1:$PPORT" "$T_DIR/dash.json"

# --- a full server still answers its scrapes ---
check "with every slot taken, /metrics answers" python3 "$CLIENT" full "$URL" "http://$MADDR/metrics" "$TOKEN"

# --- the log lines ---
kill -TERM "$SERVER"
wait "$SERVER"
RC=$?; check "the server stops cleanly (0)" expect_rc 0
check "log lines carry the trace id" python3 "$CLIENT" log "$T_WORK/serve.log"
check "no cell is left" wait_until no_cells
finish
