"""The operator's dashboard at ``/ui``: plain HTML and a little JavaScript over the dashboard's JSON endpoints, with
charts drawn server-side as SVG (nothing is fetched from outside: the gateway works offline)."""
