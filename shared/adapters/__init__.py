"""Cloud-client code more than one service uses (the import rule lets `*.adapters` import
boto3 and kubernetes; nothing else in shared/ does)."""
