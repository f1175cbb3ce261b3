"""The small routes: models, health, readiness. The model-calling surfaces live in ``gateway.surfaces``; what
every route shares (the API key, the body limit) is ``gateway.routes.gatekeeper``."""

from __future__ import annotations

import os
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.http.jsonio import dumps
from gateway.service import Services


async def list_models(request: Request) -> Response:
    services: Services = request.app.state.services
    data = [{"id": model_id, "object": "model", "created": 0, "owned_by": "ecgw"}
            for model_id in services.chooser.model_ids()]
    listing: dict[str, Any] = {"object": "list", "data": data}
    if request.headers.get("anthropic-version"):  # Anthropic's SDK: its own fields beside OpenAI's
        for model in data:
            model.update(type="model", display_name=model["id"], created_at="1970-01-01T00:00:00Z")
        listing.update(has_more=False, first_id=data[0]["id"] if data else None,
                       last_id=data[-1]["id"] if data else None)
    return Response(dumps(listing), media_type="application/json")


async def healthz(request: Request) -> Response:
    return Response(dumps({"status": "ok"}), media_type="application/json")


async def readyz(request: Request) -> Response:
    services: Services = request.app.state.services
    checks: dict[str, Any] = {}
    ok = True
    for name, (ready, detail) in (await services.doors.ready()).items():
        checks[name] = {"ready": ready, "detail": detail}
        ok = ok and ready
    for side, members in services.doors.deployments().items():
        checks[side]["deployments"] = members
    # which process answers, and where its detectors' models were loaded (``ecgw serve``'s parent, for a worker)
    process = {"pid": os.getpid(), "models_loaded_in": services.protector.models_loaded_in()}
    return Response(dumps({"status": "ready" if ok else "not ready", "upstreams": checks, "process": process}),
                    status_code=200 if ok else 503, media_type="application/json")
