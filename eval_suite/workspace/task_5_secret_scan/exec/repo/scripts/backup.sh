#!/bin/sh
mysqldump -u backup -p'S3cure!Backup#2026' --all-databases > /var/backups/all.sql
