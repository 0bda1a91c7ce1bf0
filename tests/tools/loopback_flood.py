#!/usr/bin/env python3
"""A loopback TCP flood: 16 KB writes with Nagle off, read back by a thread, so that much of the
receive path runs in softirq (NET_RX). It ends by itself after SECONDS (default 15), should the
test that started it die first.

usage: loopback_flood.py [SECONDS]"""
import socket, sys, threading, time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 15.0
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
sender = socket.create_connection(listener.getsockname())
receiver, _ = listener.accept()
sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def drain():
    while receiver.recv(1 << 20):
        pass


threading.Thread(target=drain, daemon=True).start()
end, msg = time.time() + seconds, b"x" * 16384
while time.time() < end:
    sender.send(msg)
