"""A TCP forwarder on loopback in front of a real server (the test Redis), whose connections a test can cut: the
server stays up for every other test, while the gateway behind this forwarder sees it go down (open connections
reset, new ones refused)."""

from __future__ import annotations

import socket
import threading


class Cuttable:
    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut = False

    def start(self) -> Cuttable:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # cut: the listener is closed
                return
            server = socket.create_connection(self._upstream)
            with self._lock:
                if self._cut:
                    client.close()
                    server.close()
                    return
                self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        """The server goes away: every open connection is reset and the port refuses new ones."""
        with self._lock:
            self._cut = True
            self._listener.close()
            for conn in self._open:
                try:
                    conn.shutdown(socket.SHUT_RDWR)  # wakes the pipes; the client reads the connection's end
                except OSError:
                    pass
                conn.close()
