"""Large copies through the OpenSSH client: `ssh -s ... sftp` processes (`bulk.py`) that
ride one standing ControlMaster connection per account (`master.py`), each spoken to by a
small SFTP client (`sftp_wire.py`), as many streams as the link needs (`stream_plan.py`).
Everything else in adapters/ssh speaks paramiko."""
