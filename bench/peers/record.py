"""What a peer creates on the engine, recorded by id the moment the engine answers, into the
directory bench/peers/created-record.ts reads (BENCH_RECORD_DIR): one empty file `container.<id>` or
`volume.<name>` per creation, or a `<uuid>.cid` file that the docker CLI itself writes at create
(`--cidfile`, for the peers that run `docker run`). The bench removes exactly these, nothing else.
"""

import os
import uuid


def _dir():
    return os.environ["BENCH_RECORD_DIR"]


def record(kind, ident):
    with open(os.path.join(_dir(), f"{kind}.{ident}"), "w"):
        pass


def cidfile_path():
    """A fresh path for `docker run --cidfile` (the CLI refuses one that exists)."""
    return os.path.join(_dir(), f"{uuid.uuid4()}.cid")


def record_docker_py_creations():
    """Wraps docker-py's two create calls (every docker-py peer goes through them) so that each id is
    recorded before the peer gets it back."""
    from docker.api.container import ContainerApiMixin
    from docker.api.volume import VolumeApiMixin

    create_container = ContainerApiMixin.create_container
    create_volume = VolumeApiMixin.create_volume

    def recording_create_container(self, *args, **kwargs):
        answer = create_container(self, *args, **kwargs)
        record("container", answer["Id"])
        return answer

    def recording_create_volume(self, *args, **kwargs):
        answer = create_volume(self, *args, **kwargs)
        record("volume", answer["Name"])
        return answer

    ContainerApiMixin.create_container = recording_create_container
    VolumeApiMixin.create_volume = recording_create_volume
