#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus_<target>/) from
the tests' own inputs: the scripted LLM server's scenarios rendered as it
renders them, the image tests' archives (good and hostile), the batch test's
task lines, copy-stream / init-request messages in the wire formats of
runtime/copy.c and runtime/proto.h, and the server's golden requests (as
"cell path, newline, body" for fuzz_request). Run it again after changing those
inputs; the output is deterministic."""
import hashlib
import json
import os
import re
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "fakes"))
sys.path.insert(0, os.path.join(TESTS, "integration"))
import fake_llm  # noqa: E402
import image_tool  # noqa: E402


def small_base():
    """image_tool.busybox_base with a small stand-in for the busybox binary."""
    entries = [("bin", "dir", None, 0o755), ("bin/busybox", "file", b"\x7fELF" + b"x" * 60, 0o755)]
    for tool in ("sh", "cat", "ls"):
        entries.append(("bin/" + tool, "sym", "busybox", 0o777))
    return entries


image_tool.busybox_base = small_base


def out_dir(name):
    d = os.path.join(HERE, "corpus_" + name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def put(d, name, data):
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def llm():
    d = out_dir("llm")
    scen = os.path.join(TESTS, "fakes", "scenarios")
    for fn in sorted(os.listdir(scen)):
        try:
            entries = fake_llm.load_scenario(os.path.join(scen, fn))
        except Exception:
            continue
        for n, e in enumerate(entries[:4]):
            if not isinstance(e, dict) or "status" in e or "raw" in e:
                continue
            content = e.get("content", "")
            try:
                o = fake_llm.openai_body(e, n, "fake-model", content)
                a = fake_llm.anthropic_body(e, n, "fake-model", content)
            except Exception:
                continue
            o["created"] = 0
            base = fn.replace(".json", "")
            put(d, "%s_%d_openai" % (base, n), b"\0" + json.dumps(o).encode())
            put(d, "%s_%d_anthropic" % (base, n), b"\1" + json.dumps(a).encode())
    # the shapes the unit tests use, and the usage overflow
    put(d, "openai_error", b'\0{"error":{"message":"overloaded"}}')
    put(d, "openai_usage_huge", b'\0{"choices":[{"message":{"role":"assistant","content":"x"}}],'
        b'"usage":{"prompt_tokens":1e300,"completion_tokens":-1}}')
    put(d, "anthropic_error", b'\1{"type":"error","error":{"type":"overloaded_error","message":"busy"}}')
    put(d, "anthropic_usage_huge", b'\1{"type":"message","content":[],"usage":{"input_tokens":1.8e19,'
        b'"cache_read_input_tokens":1.8e19,"output_tokens":1e999}}')


def tars():
    d = out_dir("tar")
    l1, l2 = image_tool.two_layers()
    put(d, "layer1.tar", l1)
    put(d, "layer2_whiteouts.tar", l2)
    import gzip
    put(d, "layer1.tar.gz", gzip.compress(l1, mtime=0))
    import tarfile
    put(d, "gnu_longname.tar", image_tool.tar_bytes(
        [("d" * 120 + "/" + "f" * 120, "file", b"long\n", 0o644)], fmt=tarfile.GNU_FORMAT))
    put(d, "ustar.tar", image_tool.tar_bytes(small_base(), fmt=tarfile.USTAR_FORMAT))
    hostile = {
        "traversal": [("../../../../../../tmp/pwned", "file", b"pwned\n", 0o644)],
        "absolute": [("/tmp/pwned", "file", b"pwned\n", 0o644)],
        "symlink_escape": [("esc", "sym", "/tmp", 0o777), ("esc/pwned", "file", b"pwned\n", 0o644)],
        "hardlink_escape": [("h", "hard", "/etc/passwd", 0o644)],
        "hardlink_dotdot": [("h", "hard", "../../../../etc/passwd", 0o644)],
        "setuid": [("bin/suid", "file", b"x", 0o4755), ("bin/sgid", "file", b"x", 0o2755)],
        "device": [("dev-evil", "chr", None, 0o666)],
        "many": [("f%03d" % i, "file", b"x", 0o644) for i in range(40)],
    }
    for name, entries in hostile.items():
        put(d, "hostile_%s.tar" % name, image_tool.tar_bytes(small_base() + entries))
    put(d, "not_an_archive", b"this is not a tar archive\n" * 20)


def oci():
    d = out_dir("oci")
    r = out_dir("registry")
    layers = image_tool.two_layers()
    cfg = image_tool.config_json(layers)
    put(d, "config.json", cfg)
    descs = [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "size": len(x),
              "digest": "sha256:" + hashlib.sha256(x).hexdigest()} for x in layers]
    cdesc = {"mediaType": "application/vnd.oci.image.config.v1+json", "size": len(cfg),
             "digest": "sha256:" + hashlib.sha256(cfg).hexdigest()}
    man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": cdesc, "layers": descs}).encode()
    mdig = "sha256:" + hashlib.sha256(man).hexdigest()
    index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                        "manifests": [
                            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": len(man),
                             "digest": mdig, "platform": {"architecture": "arm64", "os": "linux",
                                                          "variant": "v8"}},
                            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": len(man),
                             "digest": mdig, "platform": {"architecture": "amd64", "os": "linux"}}]}).encode()
    docker_list = index.replace(b"application/vnd.oci.image.index.v1+json",
                                b"application/vnd.docker.distribution.manifest.list.v2+json")
    docker_save = json.dumps([{"Config": cdesc["digest"][7:] + ".json", "RepoTags": ["test:latest"],
                               "Layers": [x["digest"][7:] + "/layer.tar" for x in descs]}]).encode()
    bad_cfg = json.loads(cfg)
    bad_cfg["rootfs"]["diff_ids"] = ["sha256:" + "0" * 64]
    for name, data in (("manifest.json", man), ("index.json", index), ("docker_list.json", docker_list),
                       ("docker_save_manifest.json", docker_save),
                       ("config_bad_diffid.json", json.dumps(bad_cfg).encode())):
        put(d, name, data)
    # registry: challenge NUL body
    challenge = b'Bearer realm="https://127.0.0.1:5001/token",service="test-registry",scope="repository:test/one:pull"'
    put(r, "token", challenge + b"\0" + json.dumps({"token": "eyJhbGciOi.x.y", "expires_in": 300}).encode())
    put(r, "access_token", b'Bearer realm=https://h/t\0{"access_token":"abc"}')
    put(r, "basic", b'Basic realm="registry"\0{"token":"a\\r\\nInjected: 1"}')
    put(r, "manifest", challenge + b"\0" + man)
    put(r, "index", challenge + b"\0" + index)
    put(r, "docker_list", b"\0" + docker_list)


def batch():
    t = out_dir("batch_task")
    src = open(os.path.join(TESTS, "integration", "t_batch.sh")).read()
    for script_block in re.findall(r"<<'JSONL'\n(.*?)\nJSONL", src, re.S):
        for i, line in enumerate(script_block.split("\n")):
            if line.strip():
                put(t, "t_batch_%02d_%d" % (i, len(os.listdir(t))), line)
    r = out_dir("batch_results")
    recs = [
        {"id": "e1", "repeat": 0, "status": "ok", "score": 1, "expected": "Paris", "steps": 2,
         "input_tokens": 120, "output_tokens": 20, "wall_s": 0.5, "mode": "agent", "dir": "e1"},
        {"id": "n3", "repeat": 1, "status": "error", "score": None, "error": "model refused",
         "input_tokens": 1e300, "output_tokens": -3, "wall_s": "x"},
        {"id": "x", "repeat": 4294967296, "status": "o" * 40},
    ]
    for i, rec in enumerate(recs):
        put(r, "record_%d" % i, json.dumps(rec))
    s = out_dir("score")
    pairs = [("Paris", "Paris"), ("The answer is 1,000.", "1000"), ("3.14159", "3.1416"),
             ("The answer is (B)", "B"), ("A, C", "A C D"), ("so \\boxed{\\dfrac{1}{2}}", "0.5"),
             ("\\boxed{7}", "\\boxed{8}"), ("the capital is Paris", "Paris"),
             ("\\fbox{\\frac{-3}{4}} \\text{ or } \\left(x\\right)", "-0.75"),
             ("1e308 * 10 = 1e309", "inf"), ("checking\n0.25\n", ""),
             # an exponent that reached the end of last_number's buffer
             (")0.75e-5" + "1" * 119 + "e-4{7l", "3.")]
    for i, (a, e) in enumerate(pairs):
        put(s, "pair_%02d" % i, a.encode() + b"\0" + e.encode())


def copy_stream():
    d = out_dir("copy")

    def rec(kind, mode, size, path):
        p = path.encode()
        return struct.pack("<B3xIQII", ord(kind), mode, size, len(p), 0) + p

    end = rec("E", 0, 0, "")[:24]
    tree = (rec("D", 0o755, 0, "top") + rec("F", 0o644, 6, "top/a.txt") + b"hello\n" +
            rec("L", 0o777, 5, "top/link") + b"a.txt" + rec("D", 0o700, 0, "top/sub") +
            rec("F", 0o4755, 2, "top/sub/suid") + b"#!" + end)
    put(d, "tree", tree)
    put(d, "file", rec("F", 0o644, 3, "one") + b"abc" + end)
    put(d, "dotdot", rec("F", 0o644, 3, "../escape") + b"abc" + end)
    put(d, "absolute", rec("F", 0o644, 3, "/tmp/escape") + b"abc" + end)
    put(d, "link_then_write", rec("D", 0o755, 0, "t") + rec("L", 0o777, 4, "t/l") + b"/tmp" +
        rec("F", 0o644, 1, "t/l/x") + b"x" + end)
    put(d, "truncated", rec("F", 0o644, 100, "short") + b"abc")


def proto():
    d = out_dir("proto")

    def req(kind, argv=(), env=(), path="", timeout=0, max_size=0, flags=0, uid=0, gid=0):
        data = b"".join(s.encode() + b"\0" for s in list(argv) + list(env) + [path])
        # struct proto_req: kind argc envc flags timeout_ms max_size data_len pad token[32] uid gid
        return struct.pack("<IIIIQQII32sII", kind, len(argv), len(env), flags, timeout, max_size,
                           len(data), 0, b"\x5a" * 32, uid, gid) + data

    put(d, "exec", req(1, ["/bin/sh", "-c", "echo hi"], ["PATH=/bin"], "/testbed", 5000))
    put(d, "exec_cellenv", req(1, ["true"]))
    put(d, "exec_user", req(1, ["id"], flags=4, uid=1000, gid=1000))
    put(d, "copy_in", req(2, path="/testbed/x", max_size=1 << 20, flags=2))
    put(d, "copy_out", req(3, path="/testbed"))
    put(d, "info", req(4))
    put(d, "layer_out", req(5))
    put(d, "file_read", req(6, path="/etc/hostname"))
    put(d, "file_write", req(7, path="/testbed/new", flags=1))
    put(d, "set_memory", req(8, max_size=256 << 20))
    put(d, "far_timeout", req(1, ["true"], timeout=(1 << 63) + 5))
    bad = bytearray(req(1, ["a", "b"]))
    bad[4] = 200  # argc beyond the strings
    put(d, "bad_argc", bytes(bad))
    put(d, "short", b"\1\0\0\0")


def dockerfile():
    """The Dockerfiles of t_image_dockerfile.sh: the one that builds, and
    the short printf'd ones (most of them refused)."""
    d = out_dir("dockerfile")
    with open(os.path.join(TESTS, "integration", "t_image_dockerfile.sh")) as f:
        script = f.read()
    main = re.search(r"cat >\"\$CTX/Dockerfile\" <<'EOF'\n(.*?)\nEOF\n", script, re.S)
    put(d, "build", main.group(1) + "\n")
    for name, fmt in re.findall(r"build_fails (\w+) \"\$\(printf '(.*?)'\)\"", script):
        put(d, "printf_" + name, fmt.replace("\\\\", "\\").replace("\\n", "\n"))
    put(d, "forms", 'FROM a\nCMD ["x", "y"]\nENTRYPOINT [broken\nENV K V W\n'
        'LABEL a="b c" d=e\nARG X\nUSER ${X:-1}:${X:+2}\nCOPY ["a b", "/c/"]\n')


def request():
    """Each golden /run_code request of serve_golden.json, and the bodies
    of the other routes and MCP's tools (good ones and refused ones), each
    after a cell path as the files route takes one."""
    d = out_dir("request")
    with open(os.path.join(TESTS, "integration", "serve_golden.json")) as f:
        golden = json.load(f)
    for n, case in enumerate(golden):
        put(d, "golden_%02d" % n, "data/in.txt\n" + json.dumps(case["request"]))
    bodies = {
        "run_cell": ("/testbed/w", {"code": "x", "language": "cpp", "stdin": "1 2", "workdir": "w",
                                    "timeout": 120, "libraries": ["numpy==2.0"], "clear_plots": True}),
        "run_bad_types": ("", {"code": 5, "language": [], "run_timeout": "1", "fetch_files": "o"}),
        "exec_cmd": ("sub/dir", {"cmd": "echo hi", "cwd": "sub", "env": {"A": "1", "B=C": "2"},
                                 "stdin": "in", "timeout": 1e9, "user": "0:0"}),
        "exec_argv": ("/a/../b", {"argv": ["/bin/echo", "a b"], "cwd": "/a/..", "timeout": -1}),
        "mcp_command": ("..", {"command": "ls -la", "session_id": "mcp-1-1", "timeout": 5}),
        "cell_new": ("//x//", {"image": "host", "idle_timeout": 1e300, "memory_limit_MB": 0.5,
                               "user": "65534"}),
        # a refusal quoting a name with a newline in it is still one line
        "env_newline": ("x", {"cmd": "true", "env": {"A": "0", "B=\n-_ aGk": "2"}}),
        "language_newline": ("x", {"code": "1", "language": "py\nthon"}),
    }
    for name, (path, body) in bodies.items():
        put(d, name, path + "\n" + json.dumps(body))
    put(d, "not_json", 'x\n{"code": ')
    put(d, "array", "a\n[1,2]")
    put(d, "empty", "")
    put(d, "base64", "p\naGVsbG8gd29ybGQ=\n")
    put(d, "base64_urlsafe", "p\n-_-_ aGk")
    put(d, "deep", "p\n" + "[" * 2000)


if __name__ == "__main__":
    dockerfile()
    llm()
    tars()
    oci()
    batch()
    copy_stream()
    proto()
    request()
