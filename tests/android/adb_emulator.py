"""A test-only Android device on loopback that speaks the adb *device* (transport) protocol.

The real ``adb`` server reaches it with ``adb connect 127.0.0.1:PORT`` exactly as it reaches a phone
with ``adb tcpip``: 24-byte message headers (CNXN/AUTH/OPEN/OKAY/WRTE/CLSE, magic, checksum for
old protocol versions), version and max-payload negotiation, a ``device::`` banner with properties
and features, one-WRTE-in-flight flow control per stream.

What is emulated (written from AOSP's ``protocol.txt``, ``SERVICES.TXT``, ``SYNC.TXT``,
``file_sync_protocol.h`` and ``shell_protocol.h`` descriptions; no adbd code was copied):

* ``shell:CMD`` / ``exec:CMD`` (raw: stdout and stderr merged, no exit status) and
  ``shell,v2[,raw|pty][,TERM=..]:CMD`` (shell protocol v2 packets: stdin 0, stdout 1, stderr 2,
  exit 3, close-stdin 4, window-size 5; ``pty`` is accepted but served without a terminal).
  Commands run as ``/bin/sh -c CMD`` on the *host*, in their own session (adbd calls ``setsid``),
  with cwd = the sandbox root (the device's ``/``).  When the host closes the stream or the
  transport drops, the process gets SIGHUP, as adbd does.  Exit status: the process's status, or
  ``0x80 | signal`` when it was killed by a signal.
* ``sync:``: STAT (lstat v1), STA2/LST2 (stat v2), LIST/LIS2 (ls v1/v2), SEND (v1 ``path,mode``,
  DATA chunks of at most 64 KiB, DONE with mtime; parent directories are created, the feature
  ``fixed_push_mkdir``), RECV, QUIT.  Errors answer FAIL with adbd's wording and end the service.
* Device paths: ``/data``, ``/sdcard``, ``/storage``, ``/system`` and ``/vendor`` live under the
  sandbox folder.  Sync paths are mapped exactly; in shell command lines every occurrence of those
  roots at a path boundary is rewritten textually to the sandbox path, and the sandbox path is
  rewritten back to the device path in the command's output.  Other absolute paths (``/proc``,
  ``/dev``, ``/tmp``, ``/bin``) are the host's.  ``/system/bin`` holds ``getprop`` (answers from
  the emulator's property table) and comes first on ``PATH``, then the directory of the Python
  running the tests (so ``#!/usr/bin/env python3`` stand-ins find it); everything else (``ls``,
  ``kill``, ``taskset``, ``chmod``...) is the host's coreutils, not Android's toybox/mksh.
  Commands see ``ADB_EMULATOR_SANDBOX`` (the sandbox path) so host stand-ins can map paths in
  files they write; the host's other ``ADB_*``/``ANDROID_*`` variables are removed.
* Fault injection: :meth:`AdbEmulator.disconnect_when` (drop the transport while a matching command
  runs), :meth:`hang_when` (SIGSTOP the matching command's process group: it is alive but makes
  no progress), :meth:`stall_when` (never answer OPEN for a matching service: adbd wedged),
  ``unauthorized=True`` (answer CNXN with AUTH tokens and never accept a signature or key, so the
  server lists the device as ``unauthorized``; :meth:`authorize` plays the user tapping *Allow*),
  :meth:`unplug` / :meth:`replug`, and :meth:`remove` / :meth:`chmod` on device paths.

Not emulated: TLS (STLS), delayed acks, sendrecv v2 / compression, abb, install, jdwp, forward and
reverse, root/remount, logcat, real terminals, SELinux, Android's uid/permission model and noexec
mounts.  Binaries are host executables, whatever ``ro.product.cpu.abi`` says.

Run stand-alone: ``python tests/android/adb_emulator.py --port 15555 --sandbox /tmp/dev``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import posixpath
import re
import secrets
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEFAULT_PROPS", "MAPPED_ROOTS", "AdbEmulator"]

# --- transport constants (protocol.txt) -------------------------------------------------------
A_SYNC = 0x434E5953
A_CNXN = 0x4E584E43
A_AUTH = 0x48545541
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_CLSE = 0x45534C43
A_WRTE = 0x45545257
A_STLS = 0x534C5453
A_VERSION_MIN = 0x01000000
A_VERSION_SKIP_CHECKSUM = 0x01000001  # peers at this version neither send nor check checksums
MAX_PAYLOAD = 1024 * 1024  # what modern adbd advertises
AUTH_TOKEN, AUTH_SIGNATURE, AUTH_RSAPUBLICKEY = 1, 2, 3
_HEADER = struct.Struct("<6I")

# --- shell protocol v2 (shell_protocol.h) ------------------------------------------------------
SHELL_STDIN, SHELL_STDOUT, SHELL_STDERR, SHELL_EXIT, SHELL_CLOSE_STDIN, SHELL_WINSIZE = range(6)
_SHELL_HEADER = struct.Struct("<BI")

# --- sync protocol (file_sync_protocol.h) ------------------------------------------------------
SYNC_DATA_MAX = 64 * 1024
_STAT_V1 = struct.Struct("<4sIII")
_STAT_V2 = struct.Struct("<4sIQQIIIIQqqq")
_DENT_V1 = struct.Struct("<4sIIII")
_DENT_V2 = struct.Struct("<4sIQQIIIIQqqqI")

MAPPED_ROOTS = ("/data", "/sdcard", "/storage", "/system", "/vendor")
FEATURES = ("shell_v2", "stat_v2", "ls_v2", "fixed_push_mkdir")
DEFAULT_PROPS: dict[str, str] = {
    "ro.product.name": "edgepart_emu",
    "ro.product.model": "Edgepart Emulated Phone",
    "ro.product.device": "emu64a",
    "ro.product.manufacturer": "edgepart",
    "ro.product.cpu.abi": "arm64-v8a",
    "ro.product.cpu.abilist": "arm64-v8a,armeabi-v7a,armeabi",
    "ro.board.platform": "emuplatform",
    "ro.hardware": "emu",
    "ro.soc.manufacturer": "Edgepart",
    "ro.soc.model": "EMU8000",
    "ro.build.version.release": "14",
    "ro.build.version.sdk": "34",
    "ro.build.fingerprint": "edgepart/edgepart_emu/emu64a:14/EMU.0/1:userdebug/test-keys",
    "ro.serialno": "EMU0000001",
}
_SAFE_SANDBOX = re.compile(r"^/[A-Za-z0-9_./+-]*$")

_GETPROP = """#!/bin/sh
# getprop for the emulated device: reads KEY=VALUE lines written by the emulator.
F='{propfile}'
if [ $# -eq 0 ]; then
  while IFS= read -r line; do printf '[%s]: [%s]\\n' "${{line%%=*}}" "${{line#*=}}"; done < "$F"
  exit 0
fi
while IFS= read -r line; do
  if [ "${{line%%=*}}" = "$1" ]; then printf '%s\\n' "${{line#*=}}"; exit 0; fi
done < "$F"
printf '%s\\n' "${{2:-}}"
"""


class _ProtocolError(Exception):
    """The peer broke the transport protocol; the connection is closed."""


def _checksum(data: bytes) -> int:
    return sum(data) & 0xFFFFFFFF


# ================================================================================================
# transport
# ================================================================================================


class _Stream:
    """One end of an adb stream: WRTE payloads in, one outstanding WRTE out at a time."""

    def __init__(self, transport: _Transport, local_id: int, remote_id: int, service: str) -> None:
        self.transport = transport
        self.local_id = local_id
        self.remote_id = remote_id
        self.service = service
        self._cond = threading.Condition()
        self._inbox = bytearray()
        self._ready = True  # an OPEN implies a READY from the opener
        self._write_lock = threading.Lock()
        self.peer_closed = False
        self.closed = False
        self.on_peer_close: list[Callable[[], None]] = []

    # called from the transport's reader thread
    def _deliver(self, data: bytes) -> None:
        with self._cond:
            self._inbox += data
            self._cond.notify_all()

    def _acked(self) -> None:
        with self._cond:
            self._ready = True
            self._cond.notify_all()

    def _peer_close(self) -> None:
        with self._cond:
            if self.peer_closed:
                return
            self.peer_closed = True
            self._cond.notify_all()
        for callback in self.on_peer_close:
            callback()

    # called from service threads
    def write(self, data: bytes) -> bool:
        """Send ``data`` as WRTE messages; False once the peer has closed the stream."""
        view = memoryview(data)
        step = self.transport.max_payload
        with self._write_lock:
            for start in range(0, max(len(view), 1), step):
                chunk = bytes(view[start : start + step])
                if not chunk:
                    return True
                with self._cond:
                    while not self._ready and not self.peer_closed:
                        self._cond.wait(0.5)
                    if self.peer_closed:
                        return False
                    self._ready = False
                if not self.transport.send(A_WRTE, self.local_id, self.remote_id, chunk):
                    return False
        return True

    def read(self, limit: int = 1 << 20) -> bytes:
        """Return up to ``limit`` received bytes, blocking; b'' once the peer closed."""
        with self._cond:
            while not self._inbox and not self.peer_closed:
                self._cond.wait(0.5)
            data = bytes(self._inbox[:limit])
            del self._inbox[:limit]
            return data

    def read_exact(self, size: int) -> bytes | None:
        """Return exactly ``size`` bytes, or None if the stream closed first."""
        with self._cond:
            while len(self._inbox) < size and not self.peer_closed:
                self._cond.wait(0.5)
            if len(self._inbox) < size:
                return None
            data = bytes(self._inbox[:size])
            del self._inbox[:size]
            return data

    def close(self) -> None:
        """Close our end (CLSE) unless the peer already did."""
        with self._cond:
            if self.closed:
                return
            self.closed = True
            send = not self.peer_closed
            self.peer_closed = True
            self._cond.notify_all()
        if send:
            self.transport.send(A_CLSE, self.local_id, self.remote_id, b"")
        self.transport.forget(self.local_id)


class _Transport:
    """One TCP connection from the adb server: handshake, message dispatch, stream table."""

    def __init__(self, emulator: AdbEmulator, sock: socket.socket) -> None:
        self.emulator = emulator
        self.sock = sock
        self._send_lock = threading.Lock()
        self._streams: dict[int, _Stream] = {}
        self._table_lock = threading.Lock()
        self._next_id = 1
        self.peer_version = A_VERSION_MIN
        self.max_payload = 4096
        self.online = False
        self.dead = False
        self.awaiting_auth = False
        self.public_keys: list[bytes] = []

    # --- wire ---------------------------------------------------------------------------------
    def send(self, command: int, arg0: int, arg1: int, payload: bytes) -> bool:
        check = 0 if self.peer_version >= A_VERSION_SKIP_CHECKSUM else _checksum(payload)
        header = _HEADER.pack(command, arg0, arg1, len(payload), check, command ^ 0xFFFFFFFF)
        with self._send_lock:
            if self.dead:
                return False
            try:
                self.sock.sendall(header + payload)
            except OSError:
                self._die()
                return False
        return True

    def _recv_exact(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            data = self.sock.recv(size - len(chunks))
            if not data:
                raise _ProtocolError("connection closed")
            chunks += data
        return bytes(chunks)

    def _read_message(self) -> tuple[int, int, int, bytes]:
        command, arg0, arg1, length, check, magic = _HEADER.unpack(self._recv_exact(24))
        if magic != command ^ 0xFFFFFFFF:
            raise _ProtocolError(f"bad magic {magic:#x} for command {command:#x}")
        if length > MAX_PAYLOAD:
            raise _ProtocolError(f"payload of {length} bytes exceeds {MAX_PAYLOAD}")
        payload = self._recv_exact(length) if length else b""
        old_peer = self.peer_version < A_VERSION_SKIP_CHECKSUM and command != A_CNXN
        if old_peer and check != _checksum(payload):
            raise _ProtocolError("payload checksum mismatch")
        return command, arg0, arg1, payload

    # --- lifecycle ----------------------------------------------------------------------------
    def serve(self) -> None:
        """Reader loop: runs until the socket closes or the peer breaks the protocol."""
        try:
            while not self.dead:
                self._dispatch(*self._read_message())
        except (OSError, _ProtocolError):
            pass
        finally:
            self._die()

    def _die(self) -> None:
        with self._send_lock:
            if self.dead:
                return
            self.dead = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        with self._table_lock:
            streams = list(self._streams.values())
            self._streams.clear()
        for stream in streams:
            stream._peer_close()
        self.emulator._transport_gone(self)

    def drop(self) -> None:
        """Close the TCP connection abruptly, as if the cable was pulled."""
        self._die()

    def forget(self, local_id: int) -> None:
        with self._table_lock:
            self._streams.pop(local_id, None)

    def connect_reply(self) -> None:
        self.online = True
        self.awaiting_auth = False
        self.send(A_CNXN, A_VERSION_SKIP_CHECKSUM, MAX_PAYLOAD, self.emulator.banner().encode())

    # --- dispatch -----------------------------------------------------------------------------
    def _dispatch(self, command: int, arg0: int, arg1: int, payload: bytes) -> None:
        if command == A_CNXN:
            if arg0 < A_VERSION_MIN or arg1 < 4096:
                raise _ProtocolError("unsupported version or max payload")
            self.peer_version = min(arg0, A_VERSION_SKIP_CHECKSUM)
            self.max_payload = min(arg1, MAX_PAYLOAD)
            if self.emulator.unauthorized:
                self.awaiting_auth = True
                self.send(A_AUTH, AUTH_TOKEN, 0, secrets.token_bytes(20))
            else:
                self.connect_reply()
        elif command == A_AUTH:
            if not self.awaiting_auth:
                return
            if arg0 == AUTH_SIGNATURE:
                # Signatures are never accepted: the emulator knows no keys. A fresh token asks the
                # server to try its next key, and finally to send its public key.
                self.send(A_AUTH, AUTH_TOKEN, 0, secrets.token_bytes(20))
            elif arg0 == AUTH_RSAPUBLICKEY:
                self.public_keys.append(payload)  # a phone would now show the "Allow?" prompt
                if not self.emulator.unauthorized:
                    # the user allowed before this key arrived (adb lists the device as
                    # unauthorized from the first AUTH token, before it sends its key)
                    self.connect_reply()
        elif not self.online:
            return  # messages before the handshake completes are ignored (protocol.txt)
        elif command == A_OPEN:
            self._open(arg0, payload.rstrip(b"\0").decode("utf-8", "replace"))
        elif command == A_OKAY:
            stream = self._streams.get(arg1)
            if stream is not None:
                stream._acked()
        elif command == A_WRTE:
            stream = self._streams.get(arg1)
            if stream is not None:
                stream._deliver(payload)
                self.send(A_OKAY, arg1, arg0, b"")
        elif command == A_CLSE:
            with self._table_lock:
                stream = self._streams.pop(arg1, None)
            if stream is not None:
                stream._peer_close()
        elif command in (A_SYNC, A_STLS):
            raise _ProtocolError("unsupported command")
        else:
            raise _ProtocolError(f"unknown command {command:#x}")

    def _open(self, remote_id: int, service: str) -> None:
        if remote_id == 0:
            raise _ProtocolError("OPEN with local-id 0")
        if self.emulator._matches("stall", service):
            return  # adbd wedged: neither OKAY nor CLSE ever comes
        handler = _service_handler(service)
        if handler is None:
            self.send(A_CLSE, 0, remote_id, b"")
            return
        with self._table_lock:
            local_id = self._next_id
            self._next_id += 1
            stream = _Stream(self, local_id, remote_id, service)
            self._streams[local_id] = stream
        self.send(A_OKAY, local_id, remote_id, b"")
        threading.Thread(
            target=_run_service,
            args=(handler, self.emulator, stream),
            daemon=True,
            name=f"adb-emu-{service[:20]}",
        ).start()


def _run_service(
    handler: Callable[[AdbEmulator, _Stream], None], emulator: AdbEmulator, stream: _Stream
) -> None:
    try:
        handler(emulator, stream)
    finally:
        stream.close()


def _service_handler(service: str) -> Callable[[AdbEmulator, _Stream], None] | None:
    if service.startswith("sync:"):
        return _serve_sync
    if service.startswith(("shell:", "shell,", "exec:")):
        return _serve_shell
    return None


# ================================================================================================
# shell
# ================================================================================================


class _Unmapper:
    """Streaming rewrite of sandbox paths back to device paths in command output."""

    def __init__(self, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        self._map = dict(pairs)
        self._patterns = sorted(self._map, key=len, reverse=True)
        self._regex = re.compile(b"|".join(re.escape(p) for p in self._patterns))
        self._held = b""

    def feed(self, data: bytes, final: bool = False) -> bytes:
        buf = self._held + data
        out = bytearray()
        pos = 0
        for match in self._regex.finditer(buf):
            out += buf[pos : match.start()] + self._map[match.group()]
            pos = match.end()
        rest = buf[pos:]
        hold = 0 if final else self._partial_suffix(rest)
        out += rest[: len(rest) - hold]
        self._held = rest[len(rest) - hold :]
        return bytes(out)

    def _partial_suffix(self, data: bytes) -> int:
        # Hold back only a tail that could still grow into a sandbox path; output is otherwise
        # forwarded immediately, so a line printed before a hang is seen at once.
        longest = max(len(p) for p in self._patterns) - 1
        for size in range(min(longest, len(data)), 0, -1):
            tail = data[-size:]
            if any(p.startswith(tail) for p in self._patterns):
                return size
        return 0


def _parse_shell_service(service: str) -> tuple[bool, str]:
    """Return (shell protocol v2?, command) for ``shell[,opts]:cmd`` or ``exec:cmd``."""
    head, _, command = service.partition(":")
    options = head.split(",")[1:]
    return (head.startswith("shell") and "v2" in options), command


def _serve_shell(emulator: AdbEmulator, stream: _Stream) -> None:
    v2, command = _parse_shell_service(stream.service)
    proc = emulator._spawn(command, merge_stderr=not v2)
    unmap = {1: emulator._unmapper(), 2: emulator._unmapper()}

    def hangup() -> None:
        # adbd: "protocol FD died, sending SIGHUP"; the pipes are drained and dropped below.
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGHUP)

    stream.on_peer_close.append(hangup)

    def pump(fd: int, channel: int) -> None:
        while True:
            try:
                data = os.read(fd, SYNC_DATA_MAX)
            except OSError:
                data = b""
            text = unmap[channel].feed(data, final=not data)
            if text:
                packet = _SHELL_HEADER.pack(channel, len(text)) + text if v2 else text
                stream.write(
                    packet
                )  # False after a hangup: keep draining so the child never blocks
            if not data:
                return

    assert proc.stdout is not None and proc.stdin is not None
    pumps = [threading.Thread(target=pump, args=(proc.stdout.fileno(), 1), daemon=True)]
    if v2:
        assert proc.stderr is not None
        pumps.append(threading.Thread(target=pump, args=(proc.stderr.fileno(), 2), daemon=True))
    for thread in pumps:
        thread.start()
    threading.Thread(target=_shell_input, args=(stream, proc, v2), daemon=True).start()
    for thread in pumps:
        thread.join()
    status = proc.wait()
    emulator._reaped(proc)
    if v2 and not stream.peer_closed:
        code = status if status >= 0 else 0x80 | -status
        stream.write(_SHELL_HEADER.pack(SHELL_EXIT, 1) + bytes([code & 0xFF]))


def _shell_input(stream: _Stream, proc: subprocess.Popen[bytes], v2: bool) -> None:
    """Forward host stdin packets (v2) or raw stream bytes (v1) to the child's stdin."""
    stdin = proc.stdin
    assert stdin is not None

    def close_stdin() -> None:
        with contextlib.suppress(OSError):
            stdin.close()

    while True:
        if v2:
            header = stream.read_exact(_SHELL_HEADER.size)
            if header is None:
                break
            kind, size = _SHELL_HEADER.unpack(header)
            data = stream.read_exact(size) if size else b""
            if data is None:
                break
            if kind == SHELL_CLOSE_STDIN:
                close_stdin()
                continue
            if kind != SHELL_STDIN:
                continue  # window-size changes mean nothing without a terminal
        else:
            data = stream.read()
            if not data:
                break
        try:
            stdin.write(data)
            stdin.flush()
        except (OSError, ValueError):
            pass
    close_stdin()


# ================================================================================================
# sync
# ================================================================================================


def _fail(stream: _Stream, message: str) -> None:
    raw = message.encode()
    stream.write(b"FAIL" + struct.pack("<I", len(raw)) + raw)


def _serve_sync(emulator: AdbEmulator, stream: _Stream) -> None:
    while True:
        header = stream.read_exact(8)
        if header is None:
            return
        request, length = struct.unpack("<4sI", header)
        if length > 1024:
            _fail(stream, "path too long")
            return
        raw = stream.read_exact(length)
        if raw is None:
            return
        arg = raw.decode("utf-8", "surrogateescape")
        if request == b"QUIT":
            return
        if request == b"STAT":
            _sync_stat_v1(emulator, stream, arg)
        elif request in (b"STA2", b"LST2"):
            _sync_stat_v2(emulator, stream, arg, follow=request == b"STA2")
        elif request in (b"LIST", b"LIS2"):
            _sync_list(emulator, stream, arg, v2=request == b"LIS2")
        elif request == b"SEND":
            if not _sync_send(emulator, stream, arg):
                return
        elif request == b"RECV":
            if not _sync_recv(emulator, stream, arg):
                return
        else:
            _fail(stream, f"unknown command {struct.unpack('<I', request)[0]:08x}")
            return


def _stat(emulator: AdbEmulator, path: str, follow: bool) -> os.stat_result | int:
    host = emulator.host_path(path)
    if host is None:
        return 2  # ENOENT: nothing outside the mapped roots exists on the emulated device
    try:
        return os.stat(host) if follow else os.lstat(host)
    except OSError as err:
        return err.errno or 2


def _sync_stat_v1(emulator: AdbEmulator, stream: _Stream, path: str) -> None:
    st = _stat(emulator, path, follow=False)
    if isinstance(st, int):
        stream.write(_STAT_V1.pack(b"STAT", 0, 0, 0))
    else:
        stream.write(_STAT_V1.pack(b"STAT", st.st_mode, st.st_size & 0xFFFFFFFF, int(st.st_mtime)))


def _sync_stat_v2(emulator: AdbEmulator, stream: _Stream, path: str, follow: bool) -> None:
    tag = b"STA2" if follow else b"LST2"
    st = _stat(emulator, path, follow=follow)
    if isinstance(st, int):
        stream.write(_STAT_V2.pack(tag, st, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        return
    stream.write(_STAT_V2.pack(tag, 0, *_stat_v2_fields(st)))


def _stat_v2_fields(st: os.stat_result) -> tuple[int, ...]:
    """``dev`` to ``ctime`` of a v2 stat or directory entry, as adbd sends them."""
    return (
        st.st_dev,
        st.st_ino,
        st.st_mode,
        st.st_nlink,
        st.st_uid,
        st.st_gid,
        st.st_size,
        int(st.st_atime),
        int(st.st_mtime),
        int(st.st_ctime),
    )


def _sync_list(emulator: AdbEmulator, stream: _Stream, path: str, v2: bool) -> None:
    host = emulator.host_path(path)
    out = bytearray()
    names: list[str] = []
    if host is not None and host.is_dir():
        names = [".", "..", *sorted(os.listdir(host))]
    for name in names:
        encoded = name.encode("utf-8", "surrogateescape")
        try:
            st = os.lstat(host / name) if host is not None else None
        except OSError:
            continue
        assert st is not None
        if v2:
            out += _DENT_V2.pack(b"DNT2", 0, *_stat_v2_fields(st), len(encoded))
        else:
            out += _DENT_V1.pack(
                b"DENT", st.st_mode, st.st_size & 0xFFFFFFFF, int(st.st_mtime), len(encoded)
            )
        out += encoded
    done = _DENT_V2 if v2 else _DENT_V1
    out += b"DONE" + bytes(done.size - 4)
    stream.write(bytes(out))


def _parse_mode(text: str) -> int:
    text = text.strip()
    if text.startswith(("0x", "0X")):
        return int(text, 16)
    if len(text) > 1 and text.startswith("0"):
        return int(text, 8)
    return int(text)


def _drain_send(stream: _Stream) -> None:
    """After a FAIL, swallow DATA until DONE so the client sees the error (as adbd does)."""
    while True:
        header = stream.read_exact(8)
        if header is None:
            return
        kind, size = struct.unpack("<4sI", header)
        if kind != b"DATA" or size > SYNC_DATA_MAX or stream.read_exact(size) is None:
            return


def _sync_send(emulator: AdbEmulator, stream: _Stream, spec: str) -> bool:
    path, comma, mode_text = spec.rpartition(",")
    if not comma:
        _fail(stream, "missing , in ID_SEND_V1")
        return False
    try:
        mode = _parse_mode(mode_text)
    except ValueError:
        _fail(stream, "bad mode")
        return False
    if stat.S_ISLNK(mode):
        _fail(stream, "symlink push is not emulated")
        _drain_send(stream)
        return False
    # adbd copies the user permission bits to group and other
    mode &= 0o777
    mode |= (mode >> 3) & 0o070
    mode |= (mode >> 3) & 0o007
    host = emulator.host_path(path)
    if host is None:
        _fail(stream, "couldn't create file: Read-only file system")
        _drain_send(stream)
        return False
    try:
        if host.is_file() or host.is_symlink():
            host.unlink()  # replacing a running binary must not hit ETXTBSY
        host.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(host, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    except OSError as err:
        _fail(stream, f"couldn't create file: {os.strerror(err.errno or 5)}")
        _drain_send(stream)
        return False
    with os.fdopen(fd, "wb") as out:
        while True:
            header = stream.read_exact(8)
            if header is None:
                break
            kind, size = struct.unpack("<4sI", header)
            if kind == b"DONE":
                out.close()
                os.chmod(host, mode)
                os.utime(host, (size, size))
                stream.write(b"OKAY" + bytes(4))
                return True
            if kind != b"DATA":
                _fail(stream, "invalid data message")
                break
            if size > SYNC_DATA_MAX:
                _fail(stream, "oversize data message")
                break
            data = stream.read_exact(size)
            if data is None:
                break
            out.write(data)
            emulator._transfer_progress(path)
    host.unlink(missing_ok=True)
    return False


def _sync_recv(emulator: AdbEmulator, stream: _Stream, path: str) -> bool:
    host = emulator.host_path(path)
    try:
        if host is None:
            raise FileNotFoundError(2, "No such file or directory")
        handle = open(host, "rb")  # noqa: SIM115 - closed below, loop needs it open
    except OSError as err:
        _fail(stream, f"open failed: {os.strerror(err.errno or 2)}")
        return False
    with handle:
        batch = bytearray()
        while True:
            try:
                data = handle.read(SYNC_DATA_MAX)
            except OSError as err:
                _fail(stream, f"read failed: {os.strerror(err.errno or 5)}")
                return False
            if data:
                batch += b"DATA" + struct.pack("<I", len(data)) + data
            if len(batch) >= stream.transport.max_payload or (not data and batch):
                if not stream.write(bytes(batch)):
                    return False
                batch.clear()
                emulator._transfer_progress(path)
            if not data:
                break
    return stream.write(b"DONE" + bytes(4))


# ================================================================================================
# the emulator
# ================================================================================================


@dataclass
class _Trigger:
    kind: str
    needle: str
    delay: float = 0.0
    stay_unplugged: bool = True
    fired: int = 0


@dataclass
class AdbEmulator:
    """An emulated device listening on 127.0.0.1; use as a context manager or start()/stop().

    Parameters
    ----------
    sandbox
        Host folder that holds the device's ``/data``, ``/sdcard``, ``/system``... trees.
    port
        TCP port; 0 picks a free one (see :attr:`port` after :meth:`start`).
    props
        System properties (``getprop``) merged over :data:`DEFAULT_PROPS`.
    unauthorized
        Run adb's AUTH flow without ever accepting a key: ``adb devices`` shows ``unauthorized``.
    """

    sandbox: Path
    port: int = 0
    props: Mapping[str, str] = field(default_factory=dict)
    unauthorized: bool = False
    _props: dict[str, str] = field(init=False, repr=False, default_factory=dict)
    _listener: socket.socket | None = field(init=False, repr=False, default=None)
    _transports: set[_Transport] = field(init=False, repr=False, default_factory=set)
    _procs: dict[int, subprocess.Popen[bytes]] = field(init=False, repr=False, default_factory=dict)
    _triggers: list[_Trigger] = field(init=False, repr=False, default_factory=list)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _unplugged: bool = field(init=False, repr=False, default=False)
    _stopping: bool = field(init=False, repr=False, default=False)
    commands: list[str] = field(init=False, repr=False, default_factory=list)

    def __post_init__(self) -> None:
        self.sandbox = Path(self.sandbox).resolve()
        if not _SAFE_SANDBOX.match(str(self.sandbox)):
            raise ValueError(f"sandbox path {self.sandbox} must use only [A-Za-z0-9_./+-]")
        self._props = {**DEFAULT_PROPS, **self.props}

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> AdbEmulator:
        """Create the sandbox layout and start accepting connections."""
        for root in MAPPED_ROOTS:
            (self.sandbox / root.lstrip("/")).mkdir(parents=True, exist_ok=True)
        (self.sandbox / "data/local/tmp").mkdir(parents=True, exist_ok=True)
        bindir = self.sandbox / "system/bin"
        bindir.mkdir(parents=True, exist_ok=True)
        self._meta_dir().mkdir(exist_ok=True)
        self._write_props()
        getprop = bindir / "getprop"
        getprop.write_text(_GETPROP.format(propfile=self._meta_dir() / "build.prop"))
        getprop.chmod(0o755)
        sh = bindir / "sh"
        if not sh.exists():
            sh.symlink_to("/bin/sh")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(8)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept_loop, daemon=True, name="adb-emu-accept").start()
        return self

    def stop(self) -> None:
        """Close every connection, kill every process the device started, stop listening."""
        self._stopping = True
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for transport in list(self._transports):
            transport.drop()
        with self._lock:
            procs = list(self._procs.values())
        for proc in procs:
            _kill_group(proc, signal.SIGKILL)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    def __enter__(self) -> AdbEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def serial(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept_loop(self) -> None:
        while not self._stopping and self._listener is not None:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            if self._unplugged:
                sock.close()
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            transport = _Transport(self, sock)
            with self._lock:
                self._transports.add(transport)
            threading.Thread(target=transport.serve, daemon=True, name="adb-emu-transport").start()

    def _transport_gone(self, transport: _Transport) -> None:
        with self._lock:
            self._transports.discard(transport)

    # --- device identity ----------------------------------------------------------------------
    def banner(self) -> str:
        keys = ("ro.product.name", "ro.product.model", "ro.product.device")
        props = "".join(f"{k}={self._props.get(k, '')};" for k in keys)
        return f"device::{props}features={','.join(FEATURES)}"

    def set_prop(self, key: str, value: str) -> None:
        self._props[key] = value
        self._write_props()

    def _meta_dir(self) -> Path:
        return self.sandbox / ".adb_emulator"

    def _write_props(self) -> None:
        lines = "".join(f"{k}={v}\n" for k, v in sorted(self._props.items()))
        (self._meta_dir() / "build.prop").write_text(lines)

    # --- paths --------------------------------------------------------------------------------
    def host_path(self, device_path: str) -> Path | None:
        """The sandbox path for ``device_path``, or None outside the mapped roots."""
        if not device_path.startswith("/"):
            device_path = "/" + device_path
        norm = posixpath.normpath(device_path)
        if norm.startswith("//"):
            norm = "/" + norm.lstrip("/")
        for root in MAPPED_ROOTS:
            if norm == root or norm.startswith(root + "/"):
                return self.sandbox / norm.lstrip("/")
        return None

    def map_command(self, command: str) -> str:
        """Rewrite device paths in a shell command line to sandbox paths (see module doc)."""
        roots = "|".join(re.escape(r) for r in MAPPED_ROOTS)
        pattern = re.compile(rf"(?<![\w.~/-])({roots})(?=/|$|[^\w.-])")
        return pattern.sub(lambda m: f"{self.sandbox}{m.group(1)}", command)

    def _unmapper(self) -> _Unmapper:
        return _Unmapper((f"{self.sandbox}{r}".encode(), r.encode()) for r in MAPPED_ROOTS)

    # --- processes ----------------------------------------------------------------------------
    def _spawn(self, command: str, merge_stderr: bool) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ADB_", "ANDROID_"))}
        env.update(
            # the test interpreter's directory comes next so `#!/usr/bin/env python3` stand-ins
            # run with the same packages (pyenv shims would look for a HOME-relative root)
            PATH=os.pathsep.join(
                [
                    f"{self.sandbox}/system/bin",
                    os.path.dirname(sys.executable),
                    env.get("PATH", "/usr/bin:/bin"),
                ]
            ),
            TMPDIR=f"{self.sandbox}/data/local/tmp",
            HOME=str(self.sandbox),
            ANDROID_ROOT="/system",
            ANDROID_DATA="/data",
            # lets host stand-ins (e.g. a fake benchmark_model) map paths they write into files
            ADB_EMULATOR_SANDBOX=str(self.sandbox),
        )
        # A command a fault will strike is told so, and a host stand-in then keeps running long
        # enough for the fault to find it alive (real phone runs take seconds; ours take ms).
        if any(t.kind in ("disconnect", "hang") and t.needle in command for t in self._triggers):
            env["ADB_EMULATOR_FAULT_PENDING"] = "1"
        argv = ["/bin/sh", "-c", self.map_command(command)] if command else ["/bin/sh"]
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            cwd=self.sandbox,
            env=env,
            start_new_session=True,  # adbd calls setsid() for every shell
        )
        with self._lock:
            self._procs[proc.pid] = proc
            self.commands.append(command)
        for trigger in self._triggers:
            if trigger.kind in ("disconnect", "hang") and trigger.needle in command:
                trigger.fired += 1
                timer = threading.Timer(trigger.delay, self._fire, args=(trigger, proc))
                timer.daemon = True
                timer.start()
        return proc

    def _reaped(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.pop(proc.pid, None)

    def _fire(self, trigger: _Trigger, proc: subprocess.Popen[bytes] | None) -> None:
        if trigger.kind == "hang" and proc is not None:
            _kill_group(proc, signal.SIGSTOP)
        else:
            self.unplug()
            if not trigger.stay_unplugged:
                self.replug()

    def _transfer_progress(self, device_path: str) -> None:
        # A sync transfer of a matching path loses the cable after its first chunk.
        for trigger in self._triggers:
            if trigger.kind == "disconnect" and trigger.needle in device_path:
                trigger.fired += 1
                self._fire(trigger, None)

    def live_processes(self) -> list[int]:
        """PIDs of commands the device started that have not exited yet."""
        with self._lock:
            procs = list(self._procs.values())
        return [p.pid for p in procs if p.poll() is None]

    # --- fault injection ----------------------------------------------------------------------
    def disconnect_when(self, needle: str, delay: float = 0.2, stay_unplugged: bool = True) -> None:
        """Drop the transport ``delay`` s after a shell command containing ``needle`` starts,
        or right after the first chunk of a push/pull whose device path contains ``needle``."""
        self._triggers.append(_Trigger("disconnect", needle, delay, stay_unplugged))

    def hang_when(self, needle: str, delay: float = 0.2) -> None:
        """SIGSTOP a matching command's process group ``delay`` s after it starts."""
        self._triggers.append(_Trigger("hang", needle, delay))

    def stall_when(self, needle: str) -> None:
        """Never answer an OPEN whose service string contains ``needle``."""
        self._triggers.append(_Trigger("stall", needle))

    def clear_faults(self) -> None:
        self._triggers.clear()

    def _matches(self, kind: str, text: str) -> bool:
        return any(t.kind == kind and t.needle in text for t in self._triggers)

    def unplug(self) -> None:
        """Drop every connection and refuse new ones until :meth:`replug`."""
        self._unplugged = True
        for transport in list(self._transports):
            transport.drop()

    def replug(self) -> None:
        self._unplugged = False

    def authorize(self) -> None:
        """Accept the pending key, as a user tapping "Allow USB debugging" would."""
        self.unauthorized = False
        for transport in list(self._transports):
            if transport.awaiting_auth and transport.public_keys:
                transport.connect_reply()

    def remove(self, device_path: str) -> None:
        """Delete a file or tree on the device."""
        host = self._require(device_path)
        if host.is_dir() and not host.is_symlink():
            shutil.rmtree(host)
        else:
            host.unlink()

    def chmod(self, device_path: str, mode: int) -> None:
        self._require(device_path).chmod(mode)

    def _require(self, device_path: str) -> Path:
        host = self.host_path(device_path)
        if host is None:
            raise ValueError(f"{device_path} is outside the emulated roots {MAPPED_ROOTS}")
        return host


def _kill_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def main(argv: list[str] | None = None) -> int:
    """Serve an emulated device until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--sandbox", type=Path, required=True)
    parser.add_argument("--prop", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--unauthorized", action="store_true")
    args = parser.parse_args(argv)
    props = dict(p.split("=", 1) for p in args.prop)
    emulator = AdbEmulator(args.sandbox, args.port, props, args.unauthorized).start()
    print(
        f"emulated device listening on {emulator.serial}; adb connect {emulator.serial}", flush=True
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
