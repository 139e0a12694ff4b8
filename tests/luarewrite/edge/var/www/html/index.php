<?php echo "index";
