"""Ports for the local servers that stop and start again (the test broker): below the system's ephemeral range, so
that no client connection is given one while its server is down and the restart finds it free."""

from __future__ import annotations

from tests.support.scripts import load_script

maven_libs = load_script("maven_libs")


def test_a_listen_port_is_free_and_below_the_ephemeral_range():
    low, high = maven_libs.ephemeral_ports()
    assert 1024 <= low < high
    for _ in range(20):
        port = maven_libs.listen_port(pair=True)
        assert 1024 <= port < low - 1
        assert maven_libs.port_free(port) and maven_libs.port_free(port + 1)


def test_no_room_below_the_range_falls_back_to_a_free_port(monkeypatch):
    low, _ = maven_libs.ephemeral_ports()
    # As on a system whose ephemeral range starts at 1050: 1024-1048 is too little room to pick from.
    monkeypatch.setattr(maven_libs, "ephemeral_ports", lambda: (1050, 60999))
    port = maven_libs.listen_port()
    assert port >= low and maven_libs.port_free(port)  # the system's choice (`free_port`), not one of 1024-1048
