"""Per-language /run_code against the host doing the same (scripts/bench_code.sh,
issue #33). Standard library only.

  hello PORT TOKEN_FILE ROUNDS LANG...
      each language's hello world: ROUNDS /run_code round trips over one kept
      connection, alternated with the same program compiled and run on the
      host in a fresh directory; one line per language with both medians.
  sweep PORT TOKEN_FILE CONCURRENCY LANG...
      a MultiPL-E-shaped sweep: the same 20 small programs in each language,
      all of them at CONCURRENCY at once through /run_code, then on the host
      with as many workers; requests/s of both, and how many printed the
      wrong answer (none should).

A language whose host toolchain is missing is skipped, and says so.
"""
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

# the python3 a host-image cell runs (not a pyenv shim earlier on PATH)
HOST_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "python3"

# Each language: the source of a program printing f(n) = sum of i*i for
# i < n, its file name, and the host's commands (compile, then run), as
# lang/ runs them in a cell.
LANGS = {
    "python": ("n = {n}\nprint(sum(i * i for i in range(n)))\n", "main.py",
               [[HOST_PYTHON, "main.py"]]),
    "javascript": ("let s = 0;\nfor (let i = 0; i < {n}; i++) s += i * i;\nconsole.log(s);\n", "main.js",
                   [["node", "main.js"]]),
    "c": ("#include <stdio.h>\nint main(void) {{ long s = 0; for (long i = 0; i < {n}; i++) s += i * i;"
          " printf(\"%ld\\n\", s); return 0; }}\n", "main.c",
          [["gcc", "-O2", "main.c", "-o", "main", "-lm"], ["./main"]]),
    "cpp": ("#include <iostream>\nint main() {{ long s = 0; for (long i = 0; i < {n}; i++) s += i * i;"
            " std::cout << s << std::endl; }}\n", "main.cpp",
            [["g++", "-O2", "-std=c++17", "main.cpp", "-o", "main"], ["./main"]]),
    "java": ("public class Main {{ public static void main(String[] a) {{ long s = 0;"
             " for (long i = 0; i < {n}; i++) s += i * i; System.out.println(s); }} }}\n", "Main.java",
             [["javac", "Main.java"], ["java", "-ea", "Main"]]),
    "go": ("package main\nimport \"fmt\"\nfunc main() {{ s := 0; for i := 0; i < {n}; i++ {{ s += i * i }};"
           " fmt.Println(s) }}\n", "main.go",
           [["go", "build", "-o", "main", "main.go"], ["./main"]]),
    "ruby": ("puts (0...{n}).sum {{ |i| i * i }}\n", "main.rb", [["ruby", "main.rb"]]),
    "perl": ("my $s = 0; $s += $_ * $_ for 0 .. {n} - 1; print \"$s\\n\";\n", "main.pl",
             [["perl", "main.pl"]]),
    "lua": ("local s = 0\nfor i = 0, {n} - 1 do s = s + i * i end\nprint(s)\n", "main.lua",
            [["lua5.4", "main.lua"]]),
    "php": ("<?php\n$s = 0; for ($i = 0; $i < {n}; $i++) $s += $i * $i; echo $s, \"\\n\";\n", "main.php",
            [["php", "-f", "main.php"]]),
    "bash": ("s=0; for ((i = 0; i < {n}; i++)); do s=$((s + i * i)); done; echo $s\n", "main.sh",
             [["bash", "main.sh"]]),
    "r": ("n <- {n}\ncat(sum(as.numeric(seq_len(n) - 1)^2), \"\\n\", sep = \"\")\n", "main.R",
          [["Rscript", "main.R"]]),
    "csharp": ("public class P {{ public static void Main() {{ long s = 0; for (long i = 0; i < {n}; i++)"
               " s += i * i; System.Console.WriteLine(s); }} }}\n", "main.cs",
               [["mcs", "-out:main.exe", "main.cs"], ["mono", "main.exe"]]),
    "d": ("import std.stdio;\nvoid main() {{ long s = 0; foreach (i; 0 .. {n}) s += i * i; writeln(s); }}\n",
          "main.d", [["gdc", "-O2", "main.d", "-o", "main"], ["./main"]]),
}


def expected(n):
    return "%d\n" % sum(i * i for i in range(n))


def have_host(lang):
    return all(shutil.which(cmd[0]) or cmd[0].startswith("./") for cmd in LANGS[lang][2])


class Client:
    def __init__(self, port, token):
        self.port, self.token = port, token
        self.conn = None

    def run(self, lang, src):
        body = json.dumps({"code": src, "language": lang, "compile_timeout": 120, "run_timeout": 60})
        headers = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json"}
        for attempt in range(2):  # a connection the server closed: once more
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
            try:
                self.conn.request("POST", "/run_code", body, headers)
                resp = self.conn.getresponse()
                answer = json.loads(resp.read())
                return resp.status, answer
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        return None, None


def stdout_of(answer):
    return ((answer or {}).get("run_result") or {}).get("stdout")


def host_run(lang, src):
    """Compile and run src on the host in a fresh directory: its stdout."""
    _, name, cmds = LANGS[lang]
    d = tempfile.mkdtemp(prefix="sandcell-bench-host.")
    try:
        with open(os.path.join(d, name), "w") as f:
            f.write(src)
        out = ""
        for cmd in cmds:
            p = subprocess.run(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL, text=True, timeout=300)
            out = p.stdout
            if p.returncode != 0:
                return None
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def hello(port, token, rounds, langs):
    c = Client(port, token)
    print("%-11s %12s %12s %7s" % ("language", "/run_code", "host", "ratio (time: /run_code over host)"))
    for lang in langs:
        if not have_host(lang):
            print("%-11s skipped: no host toolchain" % lang)
            continue
        src = LANGS[lang][0].format(n=10)
        st, answer = c.run(lang, src)  # warm: the pool, the connection
        if st != 200 or stdout_of(answer) != expected(10):
            print("%-11s skipped: /run_code answered %s %.200r" % (lang, st, answer))
            continue
        ours, theirs = [], []
        for _ in range(rounds):  # alternated: both see the same machine
            t0 = time.perf_counter()
            c.run(lang, src)
            ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            host_run(lang, src)
            theirs.append(time.perf_counter() - t0)
        a, b = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
        print("%-11s %9.1f ms %9.1f ms %7.2f" % (lang, a, b, a / b))
        sys.stdout.flush()


def run_all(jobs, concurrency, one):
    """jobs at `concurrency` at once through one(job) -> ok; (seconds, wrong)."""
    lock = threading.Lock()
    todo = list(jobs)
    wrong = []

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                job = todo.pop()
            if not one(job):
                with lock:
                    wrong.append(job[:2])

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0, wrong


def sweep(port, token, concurrency, langs):
    langs = [lang for lang in langs if have_host(lang)]
    jobs = [(lang, n, LANGS[lang][0].format(n=n)) for lang in langs for n in range(1, 21)]
    clients = threading.local()

    def ours(job):
        if not hasattr(clients, "c"):
            clients.c = Client(port, token)
        st, answer = clients.c.run(job[0], job[2])
        return st == 200 and stdout_of(answer) == expected(job[1])

    def theirs(job):
        return host_run(job[0], job[2]) == expected(job[1])

    s1, w1 = run_all(jobs, concurrency, ours)
    s2, w2 = run_all(jobs, concurrency, theirs)
    print("sweep: %d programs (20 in each of %s) at concurrency %d" % (len(jobs), ", ".join(langs), concurrency))
    print("  /run_code %7.2f requests/s (%d wrong)   host %7.2f programs/s (%d wrong)   ratio %.2f (/run_code over host)" %
          (len(jobs) / s1, len(w1), len(jobs) / s2, len(w2), s2 / s1))
    for w in w1[:5]:
        print("  wrong through /run_code: %s n=%d" % w)


def main():
    mode, port, token_file, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    langs = sys.argv[5:] or list(LANGS)
    for lang in langs:
        if lang not in LANGS:
            sys.exit("lang_bench: no program for language %r (have: %s)" % (lang, " ".join(LANGS)))
    with open(token_file) as f:
        token = f.read().strip()
    if mode == "hello":
        hello(port, token, n, langs)
    elif mode == "sweep":
        sweep(port, token, n, langs)
    else:
        sys.exit("lang_bench: hello or sweep")


if __name__ == "__main__":
    main()
