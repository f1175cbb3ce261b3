import os

def handler(event):
    region = os.environ.get("AWS_REGION", "eu-west-1")
    return {"ok": True, "region": region}
