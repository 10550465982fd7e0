"""SandboxPool: sessions opened ahead of time, handed out one at a time.

A session handed back is closed (its cell destroyed) and a fresh one is
opened in the background, so nothing of one user reaches the next."""

import contextlib
import queue
import threading

from .exceptions import SandboxError
from .session import InteractiveSandboxSession, SandboxSession


class SandboxPool:
    def __init__(self, size=2, lang="python", interactive=False, **session_kwargs):
        if size < 1:
            raise ValueError("size must be at least 1")
        self.size, self.lang = size, lang
        self._cls = InteractiveSandboxSession if interactive else SandboxSession
        self._kwargs = session_kwargs
        self._ready = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        self._threads = []
        self._errors = []
        for _ in range(size):
            self._ready.put(self._new())  # the first ones are made here: errors show now

    def _new(self):
        return self._cls(lang=self.lang, **self._kwargs).open()

    def _refill(self):
        try:
            s = self._new()
        except Exception as e:  # noqa: BLE001 - handed to acquire()
            self._errors.append(e)
            self._ready.put(None)
            return
        with self._lock:
            if self._closed:
                s.close()
                return
        self._ready.put(s)

    def acquire(self, timeout=None):
        """A ready session (waits up to timeout seconds for one)."""
        if self._closed:
            raise SandboxError("the pool is closed")
        try:
            s = self._ready.get(timeout=timeout)
        except queue.Empty:
            raise SandboxError("no session ready within %s s" % timeout) from None
        if s is None:
            err = self._errors.pop(0) if self._errors else None
            raise SandboxError("the pool could not open a session: %s" % err)
        return s

    def release(self, session):
        """Give a session back: it is closed and replaced by a fresh one."""
        session.close()
        with self._lock:
            if self._closed:
                return
            t = threading.Thread(target=self._refill, daemon=True)
            self._threads.append(t)
        t.start()

    @contextlib.contextmanager
    def session(self, timeout=None):
        s = self.acquire(timeout)
        try:
            yield s
        finally:
            self.release(s)

    def available(self):
        return self._ready.qsize()

    def close(self):
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for t in threads:
            t.join()
        while True:
            try:
                s = self._ready.get_nowait()
            except queue.Empty:
                break
            if s is not None:
                s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
