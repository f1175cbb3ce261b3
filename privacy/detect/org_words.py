"""Words that make a run of capitalised words an organisation, a product, a place that is a business or an event,
not a person: ``Allianz Partners``, ``Focus Mode``, ``Westfield Stratford City``, ``Q3 All Hands``. Read by the
people layer (a candidate name ending in one is none) and by NER (an entity ending in one is dropped)."""

from __future__ import annotations

ORG_WORDS = frozenset("""inc ltd llc llp plc gmbh ag sa bv co corp corporation company group holdings partners
partner associates insurance assurance mutual bank capital finance financial health healthcare dental clinic
hospital medical pharma labs lab analytics systems solutions services service technologies technology tech software
logistics couriers courier traders trading catering bakery cafe restaurant hotel hotels motors airlines airways
facilities foods consulting media studio studios network networks energy power telecom centre center mall plaza
shopping city park square street road avenue lane tower towers house court gardens estate university college
school academy institute foundation trust council agency department ministry office team board committee club
summit conference day week weekend offsite hands meeting review report mode share captions compose lite pro plus
max premium edition suite cloud manager management service desk platform app apps api portal dashboard""".split())
