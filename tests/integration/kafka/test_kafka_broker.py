"""The local broker's set-up helpers (`scripts/kafka_broker.py`) that need no broker."""

from __future__ import annotations

import base64
import uuid

from tests.support.scripts import load_script

_cluster_id = load_script("kafka_broker")._cluster_id


def test_cluster_ids_are_kraft_uuids_that_never_look_like_an_option():
    # One random id in 64 starts with "-", which the storage tool read as an option: 3,000 draws would hit
    # it with near certainty if the generator let it through.
    ids = [_cluster_id() for _ in range(3000)]
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) == len(ids)
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)
    assert uuid.UUID(bytes=base64.urlsafe_b64decode(ids[0] + "=="))
