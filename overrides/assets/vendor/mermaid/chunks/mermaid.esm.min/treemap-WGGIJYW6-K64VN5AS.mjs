import{a as e,b as r}from"./chunk-GDY2UAB4.mjs";import"./chunk-ZS6VBONO.mjs";import"./chunk-AQ6EADP3.mjs";export{e as TreemapModule,r as createTreemapServices};
