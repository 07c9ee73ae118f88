module snowflake.example/client

go 1.19
