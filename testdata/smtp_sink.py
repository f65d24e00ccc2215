"""A local SMTP server for the notification tests (aiosmtpd from PyPI).

Listens on 127.0.0.1 (a free port), prints "listening on smtp://HOST:PORT"
once ready, then one JSON line per message received: the envelope, the
headers that matter, and each MIME part's type and text. Nothing leaves
the machine.
"""

import asyncio
import email
import email.policy
import json
import sys

from aiosmtpd.smtp import SMTP


class Sink:
    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        parts = []
        for part in msg.walk():
            if part.is_multipart():
                continue
            parts.append({"type": part.get_content_type(), "text": part.get_content()})
        print(
            "MESSAGE "
            + json.dumps(
                {
                    "mail_from": envelope.mail_from,
                    "rcpt_tos": envelope.rcpt_tos,
                    "from": str(msg["From"]),
                    "to": str(msg["To"]),
                    "subject": str(msg["Subject"]),
                    "message_id": str(msg["Message-ID"]),
                    "content_type": msg.get_content_type(),
                    "parts": parts,
                }
            ),
            flush=True,
        )
        return "250 OK"


async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(Sink()), "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"listening on smtp://{host}:{port}", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
