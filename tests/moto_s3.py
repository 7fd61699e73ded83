"""An S3 server for the tests, on 127.0.0.1: moto's S3 application (the one moto's own server
hands every S3 request to) served by werkzeug's threaded server, as ``ThreadedMotoServer``
serves it, with the same request handler.  What it leaves out is moto's choice of a service
for each request (its host, its signature, its body), which costs more than the S3 answer
itself: the answers are moto's, each for less CPU.  Every moto server of a process holds the
same buckets (moto keeps them in the process)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

#: How often the server's loop looks whether it was told to stop (s).
POLL_S = 0.05


def s3_application() -> Any:
    """moto's S3 application (a WSGI application)."""
    from moto.moto_server.werkzeug_app import create_backend_app

    return create_backend_app("s3")


class MotoS3:
    """``with MotoS3() as s3: s3.endpoint``: the server runs for the block."""

    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import MotoRequestHandler
        from werkzeug.serving import make_server

        self._server = make_server("127.0.0.1", 0, s3_application(), threaded=True,
                                   request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": POLL_S}, daemon=True,
                                        name="moto-s3")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def environment(self) -> dict[str, str]:
        """The variables that point the program's S3 store at this server."""
        return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": self.endpoint}

    def fill_bucket(self, root: Path, prefix: str, bucket: str = "bkt",
                    public: bool = False) -> Any:
        """Bucket ``bucket`` made, every file under ``root`` put in it under ``prefix`` (a few
        at once: each is one request), readable by anyone with ``public``; its client."""
        client = self.client()
        client.create_bucket(Bucket=bucket)
        extra = {"ACL": "public-read"} if public else {}
        files = [Path(d, name) for d, _, names in os.walk(root) for name in names]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda p: client.put_object(
                Bucket=bucket, Key=prefix + p.relative_to(root).as_posix(),
                Body=p.read_bytes(), **extra), files))
        return client

    def client(self) -> Any:
        """A boto3 S3 client of this server (boto3 is a test dependency)."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def __enter__(self) -> MotoS3:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
